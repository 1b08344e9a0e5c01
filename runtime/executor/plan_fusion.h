// Rewrites of a built plan that fold a node into the step producing its input, shared by
// the plan builder's fusions: who reads and who produces each slot, integer attributes, the constants behind
// initializer slots, the widening-Cast, ReluGrad, first-layer max pool and bias-gradient
// sum folds, moving a folded Relu on into the max pool that reads it, and the removal of
// folded steps.
#pragma once

#include <vector>

#include "runtime/executor/execution_plan.h"

namespace onnx_amp {

// Per slot: how many steps, bodies and graph outputs read it, and the step producing it
// (-1 for slots no step produces). `outer_reads` holds each step's outer-scope reads.
struct SlotUses {
  std::vector<int> readers;
  std::vector<int> producer;
};
SlotUses CountSlotUses(const GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads);

// Integer attribute `name` of `node`; `fallback` where it has none of that type.
int64_t IntAttribute(const onnx::NodeProto& node, const char* name, int64_t fallback);

// The constant held by initializer `slot`; nullptr for slots of any other kind.
const Tensor* InitializerOf(const GraphPlan& plan, int slot);

// Whether `value` may disappear into its producer: a node output, read once (by the step
// being folded), not kept observable, and output 0 of its producer. Returns the producer's
// index or -1.
int FoldableProducer(const GraphPlan& plan, const SlotUses& uses, const std::vector<bool>& keep, int value);

// Folds each Cast to float32 whose input is a float16 or bfloat16 output 0 of a step whose
// kernel widens its output (KernelDef::fuses_widening_cast) and that has no activation
// folded in, into that step: the step then stores float32 values rounded to float16 or
// bfloat16, the same numbers the Cast would give, without the low-precision tensor (its
// memory and a pass over it). Must run after the activation fold.
void FuseWideningCasts(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Folds each ReluGrad (onnx_amp domain) whose dY is output 0 of a step whose kernel
// takes it (KernelDef::fuses_relu_grad) and whose input 1 is the ReluGrad's Y, into that
// step: the step multiplies its output by the Relu's slope, the numbers the ReluGrad
// would give, without a pass over dY and Y.
void FuseReluGrads(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Moves the Relu folded into a CPU Conv into the step that alone reads the Conv's float32,
// channels-last output, when that step's kernel reads its input through a Relu
// (KernelDef::reads_through_relu: the max pool), so the Relu costs no pass over the
// activation of its own. The step applies ReluOp to each value it reads, the numbers the
// Conv's Relu would have stored. Must run after AssignChannelsLast (plan_layouts.h).
void MoveRelusIntoReaders(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads,
                          const std::vector<bool>& keep);

// Folds each CPU MaxPool of 2x2 windows at stride 2 (no pads, dilations or ceil mode; its
// Indices unused) into the Conv producing its input, when the Conv's kernel pools such an
// output itself for the Conv's constant weights (KernelDef::pools_output), the Conv's
// output is read by the pool alone, and both values are channels-last. The step then
// writes only the pooled values, the numbers the MaxPool would give. Must run after
// AssignChannelsLast (plan_layouts.h) and before MoveRelusIntoReaders.
void FuseMaxPoolsIntoConvs(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep);

// Folds each CPU ReduceSum over the first n axes of its input (axes 0..n-1 in any order,
// constant; keepdims) into the step producing that input as its output 0, when the
// step's kernel sums its output itself (KernelDef::sums_leading_axes: the activation
// gradients, whose dX a bias gradient sums) and the value is not channels-last. The step
// then writes the sums as an output 1 of its own, the numbers the ReduceSum would give,
// without a pass over dX of their own. Must run after AssignChannelsLast.
void FuseLeadingAxisSums(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads);

// Drops the steps marked in `folded`, keeping `outer_reads` parallel to plan.steps.
void RemoveFoldedSteps(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& folded);

}  // namespace onnx_amp
