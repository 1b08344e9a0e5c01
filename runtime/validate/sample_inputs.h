// Input samples for validation and the accuracy-driven search: one .npz file per
// sample (arrays named by input name), or samples generated from the declared input
// types and shapes. Generated values follow random_inputs.h (floats uniform in [-1, 1),
// integers uniform in [0, 10), so token inputs are valid indices for any vocabulary of
// 10 or more) unless an input is given its own range: uniform reals in [low, high), or
// with `integral` uniform integers in [low, high) (also for float inputs, e.g. a 0/1
// attention mask with [0, 2)).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/input_spec.h"

namespace onnx_amp {

using Feeds = std::map<std::string, Tensor>;

struct SampleRange {
  double low = 0.0;
  double high = 1.0;
  bool integral = false;
};

struct RandomSampleOptions {
  int samples = 1;
  uint64_t seed = 0;
  std::map<std::string, int64_t> dim_sizes;    // symbolic dims, by dim_param
  std::map<std::string, SampleRange> ranges;   // by input name
};

// `count` samples for the inputs without an initializer default. InvalidArgument for a
// range naming no input, an empty range, or an unresolved symbolic dim.
Expected<std::vector<Feeds>> RandomSamples(const std::vector<InputSpec>& inputs, const RandomSampleOptions& options);

// One sample per file; every array must name an input, every input without a default
// must be present. Errors name the file.
Expected<std::vector<Feeds>> ReadSamples(const std::vector<std::string>& npz_paths,
                                         const std::vector<InputSpec>& inputs);

}  // namespace onnx_amp
