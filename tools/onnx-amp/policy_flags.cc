#include "tools/onnx-amp/policy_flags.h"

#include "converter/precision_policy.h"

namespace onnx_amp {
namespace {

bool Given(const CLI::Option* option) { return option != nullptr && option->count() > 0; }

}  // namespace

bool PolicyFlags::AnyGiven() const {
  for (const CLI::Option* option : {policy_option, fp32_ops_option, low_ops_option, fp32_nodes_option,
                                    low_nodes_option, keep_option, no_keep_option, keep_names_option,
                                    hardware_option, policy_file_option, target_option}) {
    if (Given(option)) return true;
  }
  return false;
}

void AddPolicyFlags(CLI::App& command, PolicyFlags& flags) {
  flags.policy_option = command.add_option(
      "--policy", flags.policy, "float32, float16, bfloat16, mixed_float16 (default) or mixed_bfloat16");
  flags.fp32_ops_option =
      command.add_option("--fp32-ops", flags.fp32_ops, "op types kept float32 (comma-separated)")->delimiter(',');
  flags.low_ops_option =
      command.add_option("--low-ops", flags.low_ops, "op types run in the low dtype (comma-separated)")->delimiter(',');
  flags.fp32_nodes_option =
      command.add_option("--fp32-nodes", flags.fp32_nodes, "regex: nodes whose name matches stay float32");
  flags.low_nodes_option = command.add_option("--low-nodes", flags.low_nodes, "regex: nodes whose name matches run low");
  flags.keep_option = command.add_flag("--keep-io-types", flags.keep_io_types,
                                       "keep every graph input and output float32 (default)");
  flags.no_keep_option = command.add_flag("--no-keep-io-types", flags.no_keep_io_types,
                                          "let graph inputs and outputs take the low dtype");
  flags.keep_names_option =
      command.add_option("--keep-io-types-names", flags.keep_io_types_names,
                         "keep only these graph inputs/outputs float32 (comma-separated)")
          ->delimiter(',');
  flags.keep_option->excludes(flags.no_keep_option)->excludes(flags.keep_names_option);
  flags.no_keep_option->excludes(flags.keep_names_option);
  flags.hardware_option = command.add_option(
      "--hardware", flags.hardware,
      "any (default), cpu-no-fp16 or cpu-no-bf16: keep float32 where the target has no fast low-precision "
      "arithmetic, instead of adding Cast round trips");
  flags.policy_file_option = command.add_option(
      "--policy-file", flags.policy_file,
      "JSON policy: policy, fp32_ops, low_ops, fp32_nodes, low_nodes, keep_io_types, hardware, data_ranges; "
      "flags override it");
  flags.target_option = command.add_option(
      "--target", flags.target,
      "portable (default: only dtypes the ONNX schema admits) or onnx-amp (any op in any float dtype)");
}

Expected<ConvertOptions> BuildPolicyOptions(const PolicyFlags& flags) {
  ConvertOptions options;
  if (!flags.policy_file.empty()) {
    ONNX_AMP_ASSIGN_OR_RETURN(options.policy, LoadPolicyFile(flags.policy_file));
  }
  PrecisionPolicy& policy = options.policy;
  if (Given(flags.policy_option)) {
    auto kind = ParsePolicyKind(flags.policy);
    if (!kind.ok()) return kind.status().WithContext("--policy");
    policy.kind = *kind;
  }
  if (Given(flags.fp32_ops_option)) policy.fp32_ops = flags.fp32_ops;
  if (Given(flags.low_ops_option)) policy.low_ops = flags.low_ops;
  if (Given(flags.fp32_nodes_option)) policy.fp32_nodes = flags.fp32_nodes;
  if (Given(flags.low_nodes_option)) policy.low_nodes = flags.low_nodes;
  if (flags.keep_io_types) policy.keep_io_types = {true, {}};
  if (flags.no_keep_io_types) policy.keep_io_types = {false, {}};
  if (Given(flags.keep_names_option)) policy.keep_io_types = {false, flags.keep_io_types_names};
  if (Given(flags.hardware_option)) {
    auto hardware = ParseTargetHardware(flags.hardware);
    if (!hardware.ok()) return hardware.status().WithContext("--hardware");
    policy.hardware = *hardware;
  }
  ONNX_AMP_RETURN_IF_ERROR(policy.Compile());
  ONNX_AMP_ASSIGN_OR_RETURN(options.target, ParseConvertTarget(flags.target));
  return options;
}

}  // namespace onnx_amp
