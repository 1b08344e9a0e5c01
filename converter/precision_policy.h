// PrecisionPolicy: which dtype the converter aims for and how the user overrides the
// op classes of ops/ops.def, from CLI flags or a JSON policy file with the same keys:
//   {"policy": "mixed_float16", "fp32_ops": ["Add"], "low_ops": ["Softmax"],
//    "fp32_nodes": "^head/", "low_nodes": "attn.*", "keep_io_types": true | ["x", "y"],
//    "hardware": "any" | "cpu-no-fp16" | "cpu-no-bf16", "data_ranges": {"value": max_abs}}
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_def.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx_amp {

enum class PolicyKind {
  kFloat32,         // nothing converted
  kFloat16,         // every eligible op in float16
  kBFloat16,        // every eligible op in bfloat16
  kMixedFloat16,    // painted: float16 where ops.def and the neighbours allow it
  kMixedBFloat16,   // painted: bfloat16 likewise
};

std::string_view PolicyKindName(PolicyKind kind);
Expected<PolicyKind> ParsePolicyKind(std::string_view name);

// The hardware the converted model is meant for (converter-anchors (c) step 2, the EP
// capability table; (d) pain 13). Where it lacks fast arithmetic in the low dtype, a
// low op is emulated through float32 and each one only adds Cast round trips.
enum class TargetHardware {
  kAny,        // assume fast float16 and bfloat16 arithmetic
  kCpuNoFp16,  // a CPU without float16 arithmetic (no AVX512-FP16): float16 stays float32
  kCpuNoBf16,  // a CPU without bfloat16 arithmetic (no AVX512_BF16/AMX): bfloat16 stays float32
};

std::string_view TargetHardwareName(TargetHardware hardware);
Expected<TargetHardware> ParseTargetHardware(std::string_view name);
// Whether `hardware` computes in `low_type` faster than in float32.
bool HasFastArithmetic(TargetHardware hardware, DType low_type);

// Graph inputs and outputs that keep their float32 type: all, none, or the named ones.
struct KeepIoTypes {
  bool all = true;
  std::vector<std::string> names;  // used when !all

  bool Keeps(std::string_view name) const;
};

// Where a node's class came from, for the report.
struct NodeClass {
  PrecisionClass precision_class = PrecisionClass::kFixedFp32;
  std::string_view reason;  // static text: "ops.def mixed_float16", "--fp32-ops", "unknown op", ...
  bool user_pinned = false;  // set by a user override (flag or policy file)
};

class PrecisionPolicy {
 public:
  PolicyKind kind = PolicyKind::kMixedFloat16;
  std::vector<std::string> fp32_ops;
  std::vector<std::string> low_ops;
  std::string fp32_nodes;  // regex over node names, "" for none
  std::string low_nodes;
  KeepIoTypes keep_io_types;
  TargetHardware hardware = TargetHardware::kAny;
  // Largest |x| per value name recorded on sample data (the max_abs of range screening,
  // runtime/validate/range_screen.h): a value beyond the low dtype's largest finite
  // number keeps its producer and readers float32 (data_max). Empty: no data seeds.
  std::map<std::string, double> data_ranges;

  // Checks the override lists and compiles the regexes; call once before ClassOf.
  // Errors name the flag ("--fp32-nodes") or, with `policy_file` set, the file and key.
  Status Compile(const std::string& policy_file = "");

  // The dtype low ops get: float16 or bfloat16; float32 for the float32 policy.
  DType LowType() const;
  bool IsMixed() const { return kind == PolicyKind::kMixedFloat16 || kind == PolicyKind::kMixedBFloat16; }

  // The class of one node: node regexes first, then op lists, then ops.def.
  NodeClass ClassOf(std::string_view domain, std::string_view op_type, std::string_view node_name) const;
  // Whether ClassOf reads the node name (a node regex is set); when not, every node of
  // an op has the op's class.
  bool ReadsNodeNames() const { return fp32_nodes_re_.has_value() || low_nodes_re_.has_value(); }

 private:
  std::optional<std::regex> fp32_nodes_re_;
  std::optional<std::regex> low_nodes_re_;
};

// Parses a JSON policy document. `source` names it in errors (the file path).
Expected<PrecisionPolicy> ParsePolicyJson(std::string_view text, const std::string& source);
// Reads and parses a JSON policy file.
Expected<PrecisionPolicy> LoadPolicyFile(const std::string& path);

}  // namespace onnx_amp
