#include "tools/onnx-amp/convert_auto.h"

#include <cstdio>

#include "converter/search/auto_convert.h"
#include "converter/search/search_report.h"
#include "runtime/executor/input_spec.h"

namespace onnx_amp {

std::shared_ptr<AutoConvertFlags> AddAutoConvertFlags(CLI::App& convert) {
  auto flags = std::make_shared<AutoConvertFlags>();
  CLI::Option* enabled = convert.add_flag(
      "--auto", flags->enabled,
      "keep the fewest nodes float32 that make the model validate on the samples (--inputs or --random)");
  std::vector<CLI::Option*> dependent = AddSampleFlags(convert, flags->samples);
  dependent.push_back(convert.add_option("--search-report", flags->search_report, "write the JSON report of --auto here"));
  dependent.push_back(convert.add_flag("--no-range-screen", flags->no_range_screen,
                                       "with --auto: skip denying nodes whose float32 values the low dtype cannot hold"));
  for (CLI::Option* option : dependent) option->needs(enabled);
  return flags;
}

Expected<ConvertResult> RunAutoConvert(const onnx::ModelProto& model, const ConvertOptions& options,
                                       const AutoConvertFlags& flags) {
  AutoConvertOptions auto_options;
  auto_options.convert = options;
  auto_options.screen_ranges = !flags.no_range_screen;
  ONNX_AMP_ASSIGN_OR_RETURN(auto_options.validate, ToleranceOptions(flags.samples));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<InputSpec> inputs, GraphInputSpecs(model.graph()));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<Feeds> samples, GatherSamples(flags.samples, inputs));
  ONNX_AMP_ASSIGN_OR_RETURN(AutoConvertResult result, AutoConvert(model, samples, auto_options));
  const std::string text = FormatAutoConvertReport(result.search);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return IoError("cannot write to standard output");
  if (!flags.search_report.empty()) ONNX_AMP_RETURN_IF_ERROR(WriteAutoConvertReport(result.search, flags.search_report));
  return std::move(result.conversion);
}

}  // namespace onnx_amp
