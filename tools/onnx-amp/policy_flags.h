// The precision-policy flags shared by `convert` and `inspect`: --policy, --fp32-ops,
// --low-ops, --fp32-nodes, --low-nodes, the --keep-io-types family, --hardware,
// --policy-file and --target. A policy file gives defaults; flags given on the command line override its keys.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "converter/convert_model.h"
#include "runtime/core/status.h"

namespace onnx_amp {

struct PolicyFlags {
  std::string policy;
  std::vector<std::string> fp32_ops;
  std::vector<std::string> low_ops;
  std::string fp32_nodes;
  std::string low_nodes;
  bool keep_io_types = false;
  bool no_keep_io_types = false;
  std::vector<std::string> keep_io_types_names;
  std::string hardware;
  std::string policy_file;
  std::string target = "portable";

  // Which options appeared on the command line (they override the policy file).
  CLI::Option* policy_option = nullptr;
  CLI::Option* fp32_ops_option = nullptr;
  CLI::Option* low_ops_option = nullptr;
  CLI::Option* fp32_nodes_option = nullptr;
  CLI::Option* low_nodes_option = nullptr;
  CLI::Option* keep_option = nullptr;
  CLI::Option* no_keep_option = nullptr;
  CLI::Option* keep_names_option = nullptr;
  CLI::Option* hardware_option = nullptr;
  CLI::Option* policy_file_option = nullptr;
  CLI::Option* target_option = nullptr;

  // True when any of the flags above is on the command line.
  bool AnyGiven() const;
};

// Adds the flags to `command`, bound to `flags`, which must outlive the parse.
void AddPolicyFlags(CLI::App& command, PolicyFlags& flags);

// The policy (Compile()d) and target the flags select; opset is left unset.
Expected<ConvertOptions> BuildPolicyOptions(const PolicyFlags& flags);

}  // namespace onnx_amp
