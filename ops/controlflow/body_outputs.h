// The declared type of a body's outputs, for scan outputs of loops that ran zero times
// (no iteration produced a tensor to take the dtype and shape from).
#pragma once

#include <string_view>

#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// An empty tensor for scan output `output_index` of the body `attribute`, stacked along
// `axis`: the body's declared element type, and its declared shape when every dim is static
// (otherwise shape [0]).
Expected<Tensor> EmptyScanOutput(const KernelContext& context, std::string_view attribute, int output_index,
                                 int64_t axis);

}  // namespace onnx_amp
