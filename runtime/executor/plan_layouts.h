// Which values of a plan are stored channels-last. oneDNN's convolutions compute on
// channels-last (NHWC) or channel-blocked tensors; given NCHW ones, every Conv step
// reorders its input in and its output back out, about a seventh of a ResNet-18 run,
// and a training step reorders each activation and its gradient around the forward and
// both backward convolutions. A value passed only between CPU kernels that take it
// channels-last (KernelDef::channels_last: convolutions and their gradients, max pools
// and their gradients, BatchNormalization and its gradient, and element-wise ops whose
// inputs all have the output's shape) is stored so instead, and no side reorders it.
// The kernels compute the same numbers in either order.
#pragma once

#include <vector>

#include "runtime/executor/execution_plan.h"

namespace onnx_amp {

// Fills plan.channels_last: the largest set of slots such that each is a float32,
// float16 or bfloat16 [N, C, H, W] value (by the graph's shape inference), not kept
// observable (`keep`), not a graph output or read by a body, and every step producing or
// reading it takes it channels-last as its kernel's ChannelsLastSupport says, given the
// order of the step's other values (an input in output 0's order needs output 0's shape).
// Max pools and their gradients with dilations, and max pools whose Indices are read,
// take nothing channels-last.
void AssignChannelsLast(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads,
                        const std::vector<bool>& keep);

}  // namespace onnx_amp
