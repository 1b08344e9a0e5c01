// Flags shared by `validate` and `convert --auto`: where the input samples come from
// (.npz files, or --random with per-input ranges) and the tolerance overrides.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/executor/input_spec.h"
#include "runtime/validate/sample_inputs.h"
#include "runtime/validate/validator.h"

namespace onnx_amp {

struct SampleFlags {
  std::vector<std::string> inputs;
  bool random = false;
  int samples = 1;
  uint64_t seed = 0;
  std::vector<std::string> dims;
  std::vector<std::string> ranges;
  std::vector<std::string> int_ranges;
  std::optional<double> rtol;
  std::optional<double> atol;
  std::vector<std::string> tolerances;
};

// Adds --inputs, --random, --samples, --seed, --dim, --range, --int-range, --rtol,
// --atol and --tolerance to `command`, filling `flags`; returns the options added.
std::vector<CLI::Option*> AddSampleFlags(CLI::App& command, SampleFlags& flags);

// The samples for a model with these inputs: the .npz files, or generated ones.
Expected<std::vector<Feeds>> GatherSamples(const SampleFlags& flags, const std::vector<InputSpec>& inputs);

// The tolerance overrides: --rtol/--atol for every value (the one not given is 0),
// --tolerance for single outputs.
Expected<ValidateOptions> ToleranceOptions(const SampleFlags& flags);

}  // namespace onnx_amp
