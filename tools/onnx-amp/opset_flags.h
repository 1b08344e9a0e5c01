// The output-opset flags of `convert`, `inspect --policy` and `validate --policy`:
// --opset N pins the default-domain opset of the converted model; --keep-opset refuses
// to change it. Without either, the conversion raises the opset where ops that would
// run low need a newer one (converter/opset_upgrade.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <utility>

#include "converter/convert_model.h"
#include "runtime/core/status.h"

namespace onnx_amp {

struct OpsetFlags {
  std::optional<int64_t> opset;
  bool keep_opset = false;

  bool AnyGiven() const { return opset.has_value() || keep_opset; }
};

// Adds the two flags, which exclude each other, to `command`; `flags` must outlive the
// parse. Returns them, for a command whose other flags they need.
std::pair<CLI::Option*, CLI::Option*> AddOpsetFlags(CLI::App& command, OpsetFlags& flags);

// Sets options.opset and options.keep_opset; InvalidArgument naming --opset for a
// version below 1.
Status ApplyOpsetFlags(const OpsetFlags& flags, ConvertOptions& options);

}  // namespace onnx_amp
