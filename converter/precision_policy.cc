#include "converter/precision_policy.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace onnx_amp {
namespace {

// Names a setting the way the user wrote it: a flag, or a key of the policy file.
std::string SettingName(const std::string& policy_file, std::string_view key) {
  if (policy_file.empty()) {
    std::string flag = "--" + std::string(key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
  }
  return policy_file + ": key '" + std::string(key) + "'";
}

Status CompileRegex(const std::string& pattern, const std::string& setting, std::optional<std::regex>& out) {
  out.reset();
  if (pattern.empty()) return Status::Ok();
  try {
    out.emplace(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return InvalidArgument(setting + ": invalid regular expression '" + pattern + "': " + e.what());
  }
  return Status::Ok();
}

bool Contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

Expected<std::vector<std::string>> ReadStringList(const nlohmann::json& value, const std::string& setting) {
  if (!value.is_array()) return InvalidArgument(setting + ": expected a list of strings");
  std::vector<std::string> out;
  for (const nlohmann::json& item : value) {
    if (!item.is_string()) return InvalidArgument(setting + ": expected a list of strings, found " + item.dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

std::string_view PolicyKindName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kFloat32: return "float32";
    case PolicyKind::kFloat16: return "float16";
    case PolicyKind::kBFloat16: return "bfloat16";
    case PolicyKind::kMixedFloat16: return "mixed_float16";
    case PolicyKind::kMixedBFloat16: return "mixed_bfloat16";
  }
  return "?";
}

Expected<PolicyKind> ParsePolicyKind(std::string_view name) {
  for (PolicyKind kind : {PolicyKind::kFloat32, PolicyKind::kFloat16, PolicyKind::kBFloat16,
                          PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    if (name == PolicyKindName(kind)) return kind;
  }
  return InvalidArgument("unknown policy '" + std::string(name) +
                         "' (expected float32, float16, bfloat16, mixed_float16 or mixed_bfloat16)");
}

std::string_view TargetHardwareName(TargetHardware hardware) {
  switch (hardware) {
    case TargetHardware::kAny: return "any";
    case TargetHardware::kCpuNoFp16: return "cpu-no-fp16";
    case TargetHardware::kCpuNoBf16: return "cpu-no-bf16";
  }
  return "?";
}

Expected<TargetHardware> ParseTargetHardware(std::string_view name) {
  for (TargetHardware hardware : {TargetHardware::kAny, TargetHardware::kCpuNoFp16, TargetHardware::kCpuNoBf16}) {
    if (name == TargetHardwareName(hardware)) return hardware;
  }
  return InvalidArgument("unknown hardware '" + std::string(name) + "' (expected any, cpu-no-fp16 or cpu-no-bf16)");
}

bool HasFastArithmetic(TargetHardware hardware, DType low_type) {
  switch (hardware) {
    case TargetHardware::kAny: return true;
    case TargetHardware::kCpuNoFp16: return low_type != DType::kFloat16;
    case TargetHardware::kCpuNoBf16: return low_type != DType::kBFloat16;
  }
  return true;
}

bool KeepIoTypes::Keeps(std::string_view name) const { return all || Contains(names, name); }

Status PrecisionPolicy::Compile(const std::string& policy_file) {
  for (const auto& [list, key] : {std::pair{&fp32_ops, "fp32_ops"}, std::pair{&low_ops, "low_ops"}}) {
    for (const std::string& op : *list) {
      if (op.empty()) return InvalidArgument(SettingName(policy_file, key) + ": empty op name");
    }
  }
  for (const std::string& op : fp32_ops) {
    if (Contains(low_ops, op)) {
      return InvalidArgument(SettingName(policy_file, "fp32_ops") + " and " + SettingName(policy_file, "low_ops") +
                             " both name op '" + op + "'");
    }
  }
  ONNX_AMP_RETURN_IF_ERROR(CompileRegex(fp32_nodes, SettingName(policy_file, "fp32_nodes"), fp32_nodes_re_));
  ONNX_AMP_RETURN_IF_ERROR(CompileRegex(low_nodes, SettingName(policy_file, "low_nodes"), low_nodes_re_));
  return Status::Ok();
}

DType PrecisionPolicy::LowType() const {
  switch (kind) {
    case PolicyKind::kFloat32: return DType::kFloat32;
    case PolicyKind::kFloat16:
    case PolicyKind::kMixedFloat16: return DType::kFloat16;
    case PolicyKind::kBFloat16:
    case PolicyKind::kMixedBFloat16: return DType::kBFloat16;
  }
  return DType::kFloat32;
}

NodeClass PrecisionPolicy::ClassOf(std::string_view domain, std::string_view op_type,
                                   std::string_view node_name) const {
  // A float32 pin wins over a low pin: the safe choice when both match.
  if (fp32_nodes_re_ && std::regex_search(node_name.begin(), node_name.end(), *fp32_nodes_re_)) {
    return {PrecisionClass::kDeny, "--fp32-nodes matches the node name", true};
  }
  if (low_nodes_re_ && std::regex_search(node_name.begin(), node_name.end(), *low_nodes_re_)) {
    return {PrecisionClass::kAllow, "--low-nodes matches the node name", true};
  }
  if (Contains(fp32_ops, op_type)) return {PrecisionClass::kDeny, "--fp32-ops names the op", true};
  if (Contains(low_ops, op_type)) return {PrecisionClass::kAllow, "--low-ops names the op", true};

  const OpPrecisionDef* def = FindOpPrecision(domain, op_type);
  if (def == nullptr) return {PrecisionClass::kFixedFp32, "unknown op", false};
  switch (kind) {
    case PolicyKind::kMixedFloat16: return {def->mixed_float16, "ops.def class under mixed_float16", false};
    case PolicyKind::kMixedBFloat16: return {def->mixed_bfloat16, "ops.def class under mixed_bfloat16", false};
    case PolicyKind::kFloat16:
    case PolicyKind::kBFloat16:
      if (def->mixed_float16 == PrecisionClass::kFixedFp32) return {PrecisionClass::kFixedFp32, "ops.def fixed_fp32", false};
      return {PrecisionClass::kAllow, "plain low policy converts every op", false};
    case PolicyKind::kFloat32: return {PrecisionClass::kFixedFp32, "float32 policy", false};
  }
  return {PrecisionClass::kFixedFp32, "unknown policy", false};
}

Expected<PrecisionPolicy> ParsePolicyJson(std::string_view text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(source + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) return InvalidArgument(source + ": expected a JSON object");

  PrecisionPolicy policy;
  for (const auto& [key, value] : doc.items()) {
    const std::string setting = SettingName(source, key);
    if (key == "policy") {
      if (!value.is_string()) return InvalidArgument(setting + ": expected a string");
      auto kind = ParsePolicyKind(value.get<std::string>());
      if (!kind.ok()) return kind.status().WithContext(setting);
      policy.kind = *kind;
    } else if (key == "fp32_ops" || key == "low_ops") {
      ONNX_AMP_ASSIGN_OR_RETURN(auto list, ReadStringList(value, setting));
      (key == "fp32_ops" ? policy.fp32_ops : policy.low_ops) = std::move(list);
    } else if (key == "fp32_nodes" || key == "low_nodes") {
      if (!value.is_string()) return InvalidArgument(setting + ": expected a regular expression string");
      (key == "fp32_nodes" ? policy.fp32_nodes : policy.low_nodes) = value.get<std::string>();
    } else if (key == "keep_io_types") {
      if (value.is_boolean()) {
        policy.keep_io_types = {value.get<bool>(), {}};
      } else {
        ONNX_AMP_ASSIGN_OR_RETURN(auto names, ReadStringList(value, setting + " (true, false or a list of names)"));
        policy.keep_io_types = {false, std::move(names)};
      }
    } else if (key == "hardware") {
      if (!value.is_string()) return InvalidArgument(setting + ": expected a string");
      auto hardware = ParseTargetHardware(value.get<std::string>());
      if (!hardware.ok()) return hardware.status().WithContext(setting);
      policy.hardware = *hardware;
    } else if (key == "data_ranges") {
      if (!value.is_object()) return InvalidArgument(setting + ": expected an object of value name -> max |x|");
      for (const auto& [name, range] : value.items()) {
        if (!range.is_number() || !(range.get<double>() >= 0.0)) {
          return InvalidArgument(setting + ": value '" + name + "': expected a non-negative number, found " +
                                 range.dump());
        }
        policy.data_ranges[name] = range.get<double>();
      }
    } else {
      return InvalidArgument(source + ": unknown key '" + key +
                             "' (known: policy, fp32_ops, low_ops, fp32_nodes, low_nodes, keep_io_types, hardware, "
                             "data_ranges)");
    }
  }
  ONNX_AMP_RETURN_IF_ERROR(policy.Compile(source));
  return policy;
}

Expected<PrecisionPolicy> LoadPolicyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open the policy file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return ParsePolicyJson(text.str(), path);
}

}  // namespace onnx_amp
