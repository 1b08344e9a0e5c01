// Random input tensors from a graph input's declaration, for running or validating a
// model without data. Symbolic dims take their size from `dim_sizes` (by dim_param).
// Floating inputs are uniform in [-1, 1); integer inputs uniform in [0, 10), small and
// non-negative so they are valid indices for Gather-style token inputs; bools are fair
// coin flips.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/input_spec.h"

namespace onnx_amp {

// InvalidArgument naming the input and the dim when a dim has no size.
Expected<Shape> ResolveInputShape(const InputSpec& spec, const std::map<std::string, int64_t>& dim_sizes);

Expected<Tensor> RandomInput(const InputSpec& spec, const std::map<std::string, int64_t>& dim_sizes,
                             std::mt19937_64& rng);

}  // namespace onnx_amp
