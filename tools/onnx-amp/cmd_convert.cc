// `onnx-amp convert IN.onnx -o OUT.onnx [--policy P] [overrides] [--opset N | --keep-opset]
// [--report R.json] [--verify default|full|none]`: converts a float32 model to mixed
// precision (converter/convert_model.h), raising its opset where the low dtype needs it
// (opset_flags.h), or with --auto searches for the nodes to keep float32 (convert_auto.h). A policy file gives defaults; flags given
// on the command line override its keys. Large tensors stored as external data are
// streamed: read, converted and written chunk by chunk.
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "converter/convert_model.h"
#include "converter/opset_upgrade.h"
#include "runtime/onnx/model_io.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/convert_auto.h"
#include "tools/onnx-amp/opset_flags.h"
#include "tools/onnx-amp/policy_flags.h"

namespace onnx_amp {
namespace {

// External tensors of at least this size stay in their files and are streamed; smaller
// ones (shapes, biases, scalars that inference and painting read) are loaded.
constexpr size_t kStreamFromBytes = size_t{1} << 20;

struct ConvertFlags {
  std::string input;
  std::string output;
  PolicyFlags policy;
  std::string report;
  OpsetFlags opset;
  std::string verify = "default";
  bool no_sync = false;
};

Expected<ConvertOptions> BuildOptions(const ConvertFlags& flags) {
  ONNX_AMP_ASSIGN_OR_RETURN(ConvertOptions options, BuildPolicyOptions(flags.policy));
  ONNX_AMP_RETURN_IF_ERROR(ApplyOpsetFlags(flags.opset, options));
  ONNX_AMP_ASSIGN_OR_RETURN(options.verify, ParseVerifyLevel(flags.verify));
  return options;
}

// The process ends right after the command: the system takes a large converted model
// back at once, while freeing it message by message costs a few percent of the whole
// conversion. The pointer keeps it reachable, so leak checkers do not count it.
void LeaveToExit(Expected<ConvertResult>&& result) {
  static Expected<ConvertResult>* left = nullptr;
  left = new Expected<ConvertResult>(std::move(result));
}

Status RunConvert(const ConvertFlags& flags, const AutoConvertFlags& auto_flags) {
  ONNX_AMP_ASSIGN_OR_RETURN(ConvertOptions options, BuildOptions(flags));
  // --auto runs the model, so it needs the data; an opset change carries the file
  // references of tensors left in their files (converter/opset_upgrade.h).
  const bool stream = !auto_flags.enabled;
  // Per-node dtypes and reasons are written only to --report (--auto reads them too).
  options.node_report = !flags.report.empty() || auto_flags.enabled;
  LoadOptions load_options;
  if (stream) load_options.keep_external_from_bytes = kStreamFromBytes;
  size_t kept_in_files = 0;
  ONNX_AMP_ASSIGN_OR_RETURN(onnx::ModelProto model, LoadModel(flags.input, load_options, &kept_in_files));
  if (kept_in_files > 0) {  // else the model holds all its data and converts as one in memory
    const std::filesystem::path folder = std::filesystem::path(flags.input).parent_path();
    options.external_data_folder = folder.empty() ? std::filesystem::path(".") : folder;
  }
  Expected<ConvertResult> result =
      auto_flags.enabled ? RunAutoConvert(model, options, auto_flags) : ConvertModel(std::move(model), options);
  if (!result.ok()) return result.status().WithContext(flags.input);
  SaveOptions save_options;
  save_options.durable = !flags.no_sync;
  ONNX_AMP_RETURN_IF_ERROR(SaveConvertedModel(*result, flags.output, save_options));
  if (!flags.report.empty()) ONNX_AMP_RETURN_IF_ERROR(WriteReport(result->report, flags.report));

  const ConversionReport& report = result->report;
  const std::string opset = DescribeOpsetDecision(report.opset_decision);
  std::printf("%s: %lld of %lld float nodes in %s (%.1f%%), %lld Casts inserted, %lld retargeted%s%s\n",
              flags.output.c_str(), static_cast<long long>(report.converted_nodes),
              static_cast<long long>(report.float_nodes), report.policy.c_str(), report.PercentConverted(),
              static_cast<long long>(report.casts_inserted), static_cast<long long>(report.casts_retargeted),
              opset.empty() ? "" : "; ", opset.c_str());
  for (const ClampedTensor& tensor : report.clamped) {
    std::printf("  clamped '%s': %lld values beyond +-65504 (worst %g), %lld flushed to zero\n", tensor.name.c_str(),
                static_cast<long long>(tensor.clamped), tensor.worst, static_cast<long long>(tensor.flushed_to_zero));
  }
  for (const std::string& op : report.unknown_ops) std::printf("  unknown op kept float32: %s\n", op.c_str());
  if (std::fflush(stdout) != 0) return IoError("cannot write to standard output");
  LeaveToExit(std::move(result));
  return Status::Ok();
}

}  // namespace

void AddConvertCommand(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* command = app.add_subcommand("convert", "Convert a float32 model to float16/bfloat16 mixed precision");
  command->add_option("MODEL", flags->input, "float32 ONNX model")->required();
  command->add_option("-o,--output", flags->output, "where to write the converted model")->required();
  AddPolicyFlags(*command, flags->policy);
  command->add_option("--report", flags->report, "write the JSON conversion report here");
  AddOpsetFlags(*command, flags->opset);
  command->add_option("--verify", flags->verify,
                      "how the output is checked before it is written: default (what conversion can break: definitions, "
                      "type constraints of the nodes it changed, converted tensors, graph I/O; linear time), full (also "
                      "ONNX's checker and strict shape inference: as slow again as converting) or none");
  command->add_flag("--no-sync", flags->no_sync,
                    "skip fsync of the output (still replaced atomically, but a power loss may lose it)");
  auto auto_flags = AddAutoConvertFlags(*command);
  runner.Bind(*command, [flags, auto_flags] { return RunConvert(*flags, *auto_flags); });
}

}  // namespace onnx_amp
