#include "runtime/exec/kernel.h"

#include <onnx/onnx_pb.h>

namespace onnx_amp {

const onnx::AttributeProto* KernelContext::attribute(std::string_view name) const {
  for (const onnx::AttributeProto& attr : node().attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

int64_t KernelContext::attr_int(std::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::INT ? attr->i() : fallback;
}

float KernelContext::attr_float(std::string_view name, float fallback) const {
  const onnx::AttributeProto* attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::FLOAT ? attr->f() : fallback;
}

std::string KernelContext::attr_string(std::string_view name, std::string_view fallback) const {
  const onnx::AttributeProto* attr = attribute(name);
  return attr && attr->type() == onnx::AttributeProto::STRING ? attr->s() : std::string(fallback);
}

std::vector<int64_t> KernelContext::attr_ints(std::string_view name) const {
  const onnx::AttributeProto* attr = attribute(name);
  if (!attr || attr->type() != onnx::AttributeProto::INTS) return {};
  return {attr->ints().begin(), attr->ints().end()};
}

std::vector<float> KernelContext::attr_floats(std::string_view name) const {
  const onnx::AttributeProto* attr = attribute(name);
  if (!attr || attr->type() != onnx::AttributeProto::FLOATS) return {};
  return {attr->floats().begin(), attr->floats().end()};
}

std::vector<std::string> KernelContext::attr_strings(std::string_view name) const {
  const onnx::AttributeProto* attr = attribute(name);
  if (!attr || attr->type() != onnx::AttributeProto::STRINGS) return {};
  return {attr->strings().begin(), attr->strings().end()};
}

Status KernelContext::Error(ErrorCode code, const std::string& message) const {
  const onnx::NodeProto& n = node();
  const std::string name = n.name().empty() ? "<unnamed>" : n.name();
  return Status(code, "node '" + name + "' (" + n.op_type() + "): " + message);
}

Status KernelContext::UnsupportedDType(DType dtype) const {
  return Error(ErrorCode::kUnsupported, "dtype " + std::string(DTypeName(dtype)) + " is not supported");
}

}  // namespace onnx_amp
