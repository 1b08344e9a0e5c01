// `onnx-amp validate MODEL (--policy P | --against MIXED.onnx) [samples] [--per-node]
// [tolerances] [--report R.json] [--target portable|onnx-amp] [--opset N | --keep-opset]`:
// runs the float32 model and its mixed-precision version (converted here with --policy,
// or given) on the same samples and compares every output, and with --per-node every
// intermediate value, with the metrics of runtime/validate/tensor_metrics.h. Text on
// stdout (after a line saying how the conversion changed the opset, if it did), JSON
// with --report. Exits 1 when an output leaves its tolerance, naming the first divergence.
#include <cstdio>
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "converter/opset_upgrade.h"
#include "runtime/executor/input_spec.h"
#include "runtime/onnx/model_io.h"
#include "runtime/validate/report_format.h"
#include "runtime/validate/validator.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/memory_flag.h"
#include "tools/onnx-amp/opset_flags.h"
#include "tools/onnx-amp/sample_flags.h"

namespace onnx_amp {
namespace {

struct ValidateFlags {
  std::string model;
  std::string policy;
  std::string against;
  std::string target = "portable";
  OpsetFlags opset;
  bool per_node = false;
  std::string report;
  std::string max_memory;
  SampleFlags samples;
};

struct MixedModel {
  onnx::ModelProto model;
  std::string opset_change;  // with --policy: how the conversion settled the opset ("" when kept)
};

Expected<MixedModel> LoadOrConvert(const ValidateFlags& flags, const onnx::ModelProto& model) {
  MixedModel mixed;
  if (!flags.against.empty()) {
    ONNX_AMP_ASSIGN_OR_RETURN(mixed.model, LoadModel(flags.against));
    return mixed;
  }
  ConvertOptions options;
  auto kind = ParsePolicyKind(flags.policy);
  if (!kind.ok()) return kind.status().WithContext("--policy");
  options.policy.kind = *kind;
  ONNX_AMP_RETURN_IF_ERROR(options.policy.Compile());
  ONNX_AMP_ASSIGN_OR_RETURN(options.target, ParseConvertTarget(flags.target));
  ONNX_AMP_RETURN_IF_ERROR(ApplyOpsetFlags(flags.opset, options));
  Expected<ConvertResult> converted = ConvertModel(model, options);
  if (!converted.ok()) return converted.status().WithContext(flags.model);
  mixed.model = std::move(converted->model);
  mixed.opset_change = DescribeOpsetDecision(converted->report.opset_decision);
  return mixed;
}

Status RunValidate(const ValidateFlags& flags) {
  ONNX_AMP_ASSIGN_OR_RETURN(ValidateOptions options, ToleranceOptions(flags.samples));
  options.per_node = flags.per_node;
  ONNX_AMP_ASSIGN_OR_RETURN(options.max_memory_bytes, ParseMaxMemoryFlag(flags.max_memory));
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(flags.model));
  ONNX_AMP_ASSIGN_OR_RETURN(const MixedModel mixed, LoadOrConvert(flags, model));
  Expected<std::vector<InputSpec>> inputs = GraphInputSpecs(model.graph());
  if (!inputs.ok()) return inputs.status().WithContext(flags.model);
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<Feeds> samples, GatherSamples(flags.samples, *inputs));
  Expected<ValidationReport> report = ValidateModels(model, mixed.model, samples, options);
  if (!report.ok()) return report.status().WithContext(flags.model);

  std::string text = FormatValidationReport(*report);
  if (!mixed.opset_change.empty()) text = "Converted " + flags.policy + ": " + mixed.opset_change + "\n" + text;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return IoError("cannot write to standard output");
  }
  if (!flags.report.empty()) ONNX_AMP_RETURN_IF_ERROR(WriteValidationReport(*report, flags.report));
  if (!report->passed) return NumericError(SummarizeFailure(*report));
  return Status::Ok();
}

}  // namespace

void AddValidateCommand(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* command =
      app.add_subcommand("validate", "Compare a mixed-precision model with its float32 original on sample inputs");
  command->add_option("MODEL", flags->model, "float32 ONNX model")->required();
  CLI::Option_group* mixed = command->add_option_group("mixed model", "exactly one of --policy and --against");
  CLI::Option* policy = mixed->add_option(
      "--policy", flags->policy, "convert MODEL with this policy (float16, bfloat16, mixed_float16, mixed_bfloat16)");
  mixed->add_option("--against", flags->against, "the mixed model to compare with MODEL");
  mixed->require_option(1);
  command->add_option("--target", flags->target, "with --policy: portable (default) or onnx-amp, as in convert")
      ->needs(policy);
  const auto [opset, keep_opset] = AddOpsetFlags(*command, flags->opset);
  opset->needs(policy);
  keep_opset->needs(policy);
  command->add_flag("--per-node", flags->per_node, "compare every intermediate value the two models share by name");
  command->add_option("--report", flags->report, "write the JSON validation report here");
  AddSampleFlags(*command, flags->samples);
  AddMaxMemoryFlag(*command, flags->max_memory);
  runner.Bind(*command, [flags] { return RunValidate(*flags); });
}

}  // namespace onnx_amp
