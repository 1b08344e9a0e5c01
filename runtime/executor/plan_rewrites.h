// Rewrites of an execution plan (execution_plan.h), applied when the plan is built with
// fusion on, so a run makes fewer passes over each activation: inference ones that fold a
// node into the Conv before it (before the activation fold of plan_fusion.h), and a
// training one that hands batch statistics from a BatchNormalization to its gradient.
// Each rewrite leaves a value that must stay observable (a graph output, a captured value,
// one read twice) as it is.
#pragma once

#include <vector>

#include "runtime/executor/execution_plan.h"

namespace onnx_amp {

// Folds each inference-mode BatchNormalization that alone reads the output of a CPU Conv
// into that Conv: with s = scale / sqrt(var + epsilon) per output channel, the Conv's
// weights become W * s and its bias (B - mean) * s + bias, computed in double once, as
// new initializers in W's dtype. Needs every BatchNormalization parameter and the Conv's
// W and B constant. The folded step is labelled "Conv+BatchNormalization".
void FoldBatchNormIntoConv(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Folds each Add that alone reads the output of a CPU Conv into that Conv (its kernel adds
// the other operand through a sum post-op, before any activation, which FuseActivations
// may then fold too: "Conv+Add+Relu", the residual connection of a ResNet block). Needs
// both operands' shapes equal in the graph's shape inference (no broadcasting) and the
// other operand computed before the Conv runs.
void FuseConvAdd(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Folds each Add of a constant float32 row [N] that alone reads the output of a CPU MatMul
// with constant float32 weights [..., K, N] into that MatMul (its kernel adds the row
// before any activation, which FuseActivations may then fold too: "MatMul+Add+Relu", a
// linear layer as exporters write it). In float32 the sum's one rounding is the Add's,
// so the bits are the separate nodes'; float16/bfloat16 products are rounded before
// their Add and stay unfused.
void FuseMatMulBias(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Training: hands each training-mode CPU BatchNormalization's batch mean and variance to
// the BatchNormalizationGrad that reads the same channels-last X (run after
// AssignChannelsLast), through two new slots (ops/normalization/batch_statistics.h). The
// gradient then skips its own pass over X for the mean; the values are the forward's very
// sums, so no bit changes.
void ShareBatchStatistics(GraphPlan& plan);

}  // namespace onnx_amp
