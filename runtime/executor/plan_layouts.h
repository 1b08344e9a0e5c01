// Which values of a plan are stored channels-last. oneDNN's convolutions compute on
// channels-last (NHWC) or channel-blocked tensors; given NCHW ones, every Conv step
// reorders its input in and its output back out, about a seventh of a ResNet-18 run.
// A value passed from a CPU Conv (or a max pool of such values) only to CPU Convs and
// max pools is stored channels-last instead, so neither side reorders it. The values
// computed are the same bits: the primitives are the same, only where their inputs come
// from and their outputs go changes.
#pragma once

#include <vector>

#include "runtime/executor/execution_plan.h"

namespace onnx_amp {

// Fills plan.channels_last. A slot becomes channels-last when it is a float32, float16
// or bfloat16 [N, C, H, W] value (by the graph's shape inference), not kept observable
// (`keep`), not a graph output or read by a body, produced as output 0 of a step whose
// kernel takes channels-last values (KernelDef::takes_channels_last): a Conv, or a
// MaxPool whose own input is channels-last, and read only as a Conv's input X or fused
// residual, or as the X of a MaxPool with no dilation whose Indices nobody reads.
// A MaxPool may read a channels-last X and write an NCHW Y (its kernel transposes).
void AssignChannelsLast(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads,
                        const std::vector<bool>& keep);

}  // namespace onnx_amp
