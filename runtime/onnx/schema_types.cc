#include "runtime/onnx/schema_types.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <onnx/defs/schema.h>

namespace onnx_amp {
namespace {

// The ONNX element code a type string names ("float" -> 1, "bfloat16" -> 16); 0 for none.
int32_t ElemCode(std::string_view name) {
  static const std::unordered_map<std::string, int32_t> codes = [] {
    std::unordered_map<std::string, int32_t> map;
    const auto* values = onnx::TensorProto_DataType_descriptor();
    for (int v = 0; v < values->value_count(); ++v) {
      std::string lower = values->value(v)->name();
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      map.emplace(lower, values->value(v)->number());
    }
    return map;
  }();
  auto it = codes.find(std::string(name));
  return it == codes.end() ? 0 : it->second;
}

// The part of `text` inside "<prefix>(...)"; empty when `text` is not of that form.
std::string_view Inside(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size() + 2 || !text.starts_with(prefix) || text[prefix.size()] != '(' ||
      text.back() != ')') {
    return {};
  }
  return text.substr(prefix.size() + 1, text.size() - prefix.size() - 2);
}

void AddTypeString(std::string_view text, TypeSet& set) {
  auto bit = [](std::string_view tensor) -> uint32_t {
    const int32_t code = ElemCode(Inside(tensor, "tensor"));
    return code > 0 && code < 32 ? uint32_t{1} << code : 0;
  };
  uint32_t b = 0;
  if ((b = bit(text)) != 0) {
    set.tensors |= b;
  } else if ((b = bit(Inside(text, "seq"))) != 0) {
    set.sequences |= b;
  } else if ((b = bit(Inside(text, "optional"))) != 0) {
    set.optionals |= b;
  } else if ((b = bit(Inside(Inside(text, "optional"), "seq"))) != 0) {
    set.optional_sequences |= b;
  } else {
    set.others = true;
  }
}

TypeSet SetOf(const onnx::OpSchema::FormalParameter& param) {
  TypeSet set;
  for (const std::string* type : param.GetTypes()) AddTypeString(*type, set);
  return set;
}

std::vector<FormalParam> CompileParams(const std::vector<onnx::OpSchema::FormalParameter>& params,
                                       const std::vector<std::string>& variables) {
  std::vector<FormalParam> compiled;
  for (const auto& param : params) {
    FormalParam formal;
    auto it = std::find(variables.begin(), variables.end(), param.GetTypeStr());
    if (it != variables.end()) formal.variable = static_cast<int>(it - variables.begin());
    formal.allowed = SetOf(param);
    formal.variadic = param.GetOption() == onnx::OpSchema::Variadic;
    formal.homogeneous = !formal.variadic || param.GetIsHomogeneous();
    compiled.push_back(formal);
  }
  return compiled;
}

SchemaSignature Compile(const onnx::OpSchema& schema) {
  SchemaSignature signature;
  for (const auto& constraint : schema.typeConstraintParams()) signature.variables.push_back(constraint.type_param_str);
  signature.inputs = CompileParams(schema.inputs(), signature.variables);
  signature.outputs = CompileParams(schema.outputs(), signature.variables);
  return signature;
}

}  // namespace

DType ValueType::TensorDType() const {
  if (kind != ValueKind::kTensor) return DType::kUndefined;
  return DTypeFromOnnx(elem).value_or(DType::kUndefined);
}

std::string TypeString(const ValueType& type) {
  const auto* values = onnx::TensorProto_DataType_descriptor();
  const auto* value = values->FindValueByNumber(type.elem);
  std::string elem = value == nullptr ? "?" : value->name();
  std::transform(elem.begin(), elem.end(), elem.begin(), [](unsigned char c) { return std::tolower(c); });
  switch (type.kind) {
    case ValueKind::kUnknown: return "?";
    case ValueKind::kTensor: return "tensor(" + elem + ")";
    case ValueKind::kSequence: return "seq(tensor(" + elem + "))";
    case ValueKind::kOptional: return "optional(tensor(" + elem + "))";
    case ValueKind::kOptionalSequence: return "optional(seq(tensor(" + elem + ")))";
    case ValueKind::kOther: return "a non-tensor type";
  }
  return "?";
}

ValueType ValueTypeOf(const onnx::TypeProto& proto) {
  auto tensor_elem = [](const onnx::TypeProto& type) {
    return type.has_tensor_type() ? type.tensor_type().elem_type() : 0;
  };
  int32_t elem = 0;
  switch (proto.value_case()) {
    case onnx::TypeProto::VALUE_NOT_SET: return {};
    case onnx::TypeProto::kTensorType:
      elem = proto.tensor_type().elem_type();
      return elem == 0 ? ValueType{} : ValueType{ValueKind::kTensor, elem};
    case onnx::TypeProto::kSequenceType:
      elem = tensor_elem(proto.sequence_type().elem_type());
      return elem == 0 ? ValueType{ValueKind::kOther, 0} : ValueType{ValueKind::kSequence, elem};
    case onnx::TypeProto::kOptionalType: {
      const onnx::TypeProto& inner = proto.optional_type().elem_type();
      if ((elem = tensor_elem(inner)) != 0) return {ValueKind::kOptional, elem};
      if (inner.has_sequence_type() && (elem = tensor_elem(inner.sequence_type().elem_type())) != 0) {
        return {ValueKind::kOptionalSequence, elem};
      }
      return {ValueKind::kOther, 0};
    }
    default: return {ValueKind::kOther, 0};
  }
}

void SetTypeProto(const ValueType& type, onnx::TypeProto& proto) {
  switch (type.kind) {
    case ValueKind::kTensor: proto.mutable_tensor_type()->set_elem_type(type.elem); break;
    case ValueKind::kSequence:
      proto.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(type.elem);
      break;
    case ValueKind::kOptional:
      proto.mutable_optional_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(type.elem);
      break;
    case ValueKind::kOptionalSequence:
      proto.mutable_optional_type()->mutable_elem_type()->mutable_sequence_type()->mutable_elem_type()
          ->mutable_tensor_type()->set_elem_type(type.elem);
      break;
    case ValueKind::kUnknown:
    case ValueKind::kOther: break;
  }
}

bool TypeSet::Admits(const ValueType& type) const {
  const uint32_t bit = type.elem > 0 && type.elem < 32 ? uint32_t{1} << type.elem : 0;
  switch (type.kind) {
    case ValueKind::kUnknown: return false;
    case ValueKind::kTensor: return (tensors & bit) != 0;
    case ValueKind::kSequence: return (sequences & bit) != 0;
    case ValueKind::kOptional: return (optionals & bit) != 0;
    case ValueKind::kOptionalSequence: return (optional_sequences & bit) != 0;
    case ValueKind::kOther: return others;
  }
  return false;
}

std::optional<ValueType> TypeSet::Only() const {
  const int count = std::popcount(tensors) + std::popcount(sequences) + std::popcount(optionals) +
                    std::popcount(optional_sequences) + (others ? 1 : 0);
  if (count != 1 || others) return std::nullopt;
  if (tensors != 0) return ValueType{ValueKind::kTensor, std::countr_zero(tensors)};
  if (sequences != 0) return ValueType{ValueKind::kSequence, std::countr_zero(sequences)};
  if (optionals != 0) return ValueType{ValueKind::kOptional, std::countr_zero(optionals)};
  return ValueType{ValueKind::kOptionalSequence, std::countr_zero(optional_sequences)};
}

const FormalParam* SchemaSignature::Param(FormalSide side, int index) const {
  const std::vector<FormalParam>& params = side == FormalSide::kInput ? inputs : outputs;
  if (params.empty() || index < 0) return nullptr;
  if (index < static_cast<int>(params.size())) return &params[index];
  return params.back().variadic ? &params.back() : nullptr;
}

const SchemaSignature& SignatureOf(const onnx::OpSchema& schema) {
  static std::mutex mutex;
  static std::unordered_map<const onnx::OpSchema*, std::unique_ptr<SchemaSignature>> signatures;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<SchemaSignature>& signature = signatures[&schema];
  if (!signature) signature = std::make_unique<SchemaSignature>(Compile(schema));
  return *signature;
}

std::optional<FormalType> FormalTypeOf(const onnx::OpSchema& schema, FormalSide side, int index) {
  const auto& params = side == FormalSide::kInput ? schema.inputs() : schema.outputs();
  if (params.empty()) return std::nullopt;
  // Indices past the last parameter belong to it when it is variadic.
  const int p = std::min(index, static_cast<int>(params.size()) - 1);
  if (p < index && params[p].GetOption() != onnx::OpSchema::Variadic) return std::nullopt;
  const std::string& type_str = params[p].GetTypeStr();
  for (const auto& constraint : schema.typeConstraintParams()) {
    if (constraint.type_param_str != type_str) continue;
    FormalType formal{type_str, &constraint.allowed_type_strs};
    if (params[p].GetOption() == onnx::OpSchema::Variadic && !params[p].GetIsHomogeneous()) {
      formal.variable += std::string(side == FormalSide::kInput ? "#in" : "#out") + std::to_string(index);
    }
    return formal;
  }
  return std::nullopt;
}

bool AdmitsDType(const std::vector<std::string>& allowed, DType dtype) {
  // "tensor(<name>)", compared in place: painting asks this for every node.
  constexpr std::string_view kPrefix = "tensor(";
  const std::string_view name = DTypeName(dtype);
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& type) {
    return type.size() == kPrefix.size() + name.size() + 1 && type.starts_with(kPrefix) &&
           type.compare(kPrefix.size(), name.size(), name) == 0 && type.back() == ')';
  });
}

}  // namespace onnx_amp
