// convert --auto: the flags of the accuracy-driven conversion (converter/search/) and
// the step that runs it in place of a plain conversion. cmd_convert.cc adds the flags
// and calls RunAutoConvert when --auto is given.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "converter/convert_model.h"
#include "runtime/core/status.h"
#include "tools/onnx-amp/sample_flags.h"

namespace onnx_amp {

struct AutoConvertFlags {
  bool enabled = false;
  bool no_range_screen = false;
  std::string search_report;
  SampleFlags samples;
};

// Adds --auto, --search-report, --no-range-screen and the sample and tolerance flags
// (sample_flags.h), which all need --auto.
std::shared_ptr<AutoConvertFlags> AddAutoConvertFlags(CLI::App& convert);

// Searches for the float32 denials that make `model` validate under `options`, prints
// what was forced and why, writes --search-report, and returns the conversion to save.
Expected<ConvertResult> RunAutoConvert(const onnx::ModelProto& model, const ConvertOptions& options,
                                       const AutoConvertFlags& flags);

}  // namespace onnx_amp
