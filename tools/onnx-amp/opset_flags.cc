#include "tools/onnx-amp/opset_flags.h"

namespace onnx_amp {

std::pair<CLI::Option*, CLI::Option*> AddOpsetFlags(CLI::App& command, OpsetFlags& flags) {
  CLI::Option* opset = command.add_option(
      "--opset", flags.opset,
      "default-domain opset of the output model (default: raised where ops that would run low need a newer one)");
  CLI::Option* keep = command.add_flag(
      "--keep-opset", flags.keep_opset,
      "keep the model's opset: ops that accept the low dtype only from a newer opset stay float32");
  keep->excludes(opset);
  return {opset, keep};
}

Status ApplyOpsetFlags(const OpsetFlags& flags, ConvertOptions& options) {
  if (flags.opset && *flags.opset < 1) return InvalidArgument("--opset: must be a positive opset version");
  options.opset = flags.opset;
  options.keep_opset = flags.keep_opset;
  return Status::Ok();
}

}  // namespace onnx_amp
