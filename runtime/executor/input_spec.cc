#include "runtime/executor/input_spec.h"

#include <onnx/onnx_pb.h>

#include <set>

namespace onnx_amp {

Expected<std::vector<InputSpec>> GraphInputSpecs(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto& init : graph.initializer()) initializers.insert(init.name());
  std::vector<InputSpec> specs;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    InputSpec spec;
    spec.name = input.name();
    spec.has_default = initializers.count(input.name()) > 0;
    if (!input.type().has_tensor_type()) {
      return Unsupported("input '" + input.name() + "': only tensor inputs are supported");
    }
    const onnx::TypeProto::Tensor& type = input.type().tensor_type();
    const std::optional<DType> dtype = DTypeFromOnnx(type.elem_type());
    if (!dtype || *dtype == DType::kUndefined || *dtype == DType::kString || DTypeSize(*dtype) == 0) {
      return Unsupported("input '" + input.name() + "': element type code " + std::to_string(type.elem_type()) +
                         " is not supported");
    }
    spec.dtype = *dtype;
    if (type.has_shape()) {
      spec.has_shape = true;
      for (const onnx::TensorShapeProto::Dimension& dim : type.shape().dim()) {
        spec.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
        spec.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::string InputSpecToString(const InputSpec& spec) {
  std::string text(DTypeName(spec.dtype));
  if (!spec.has_shape) return text + "[any rank]";
  text += "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i) text += ",";
    if (spec.dims[i] >= 0) {
      text += std::to_string(spec.dims[i]);
    } else {
      text += spec.dim_params[i].empty() ? "?" : spec.dim_params[i];
    }
  }
  return text + "]";
}

Status CheckInputs(const std::vector<InputSpec>& specs, const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, const InputSpec*> by_name;
  for (const InputSpec& spec : specs) by_name[spec.name] = &spec;
  for (const auto& [name, tensor] : feeds) {
    if (by_name.count(name)) continue;
    std::string known;
    for (const InputSpec& spec : specs) {
      if (spec.has_default) continue;
      known += known.empty() ? "" : ", ";
      known += "'" + spec.name + "'";
    }
    return InvalidArgument("unknown input '" + name + "'; the model's inputs are " + (known.empty() ? "none" : known));
  }
  std::map<std::string, std::pair<int64_t, std::string>> symbols;  // dim_param -> (value, input that set it)
  for (const InputSpec& spec : specs) {
    auto it = feeds.find(spec.name);
    if (it == feeds.end()) {
      if (spec.has_default) continue;
      return NotFound("missing input '" + spec.name + "' (" + InputSpecToString(spec) + ")");
    }
    const Tensor& tensor = it->second;
    const std::string where = "input '" + spec.name + "'";
    if (!tensor.defined()) return InvalidArgument(where + ": no tensor given");
    if (tensor.dtype() != spec.dtype) {
      return InvalidArgument(where + ": expected " + std::string(DTypeName(spec.dtype)) + ", got " +
                             std::string(DTypeName(tensor.dtype())));
    }
    if (!spec.has_shape) continue;
    if (tensor.rank() != static_cast<int64_t>(spec.dims.size())) {
      return InvalidArgument(where + ": expected rank " + std::to_string(spec.dims.size()) + " (" +
                             InputSpecToString(spec) + "), got shape " + ShapeToString(tensor.shape()));
    }
    for (size_t axis = 0; axis < spec.dims.size(); ++axis) {
      const int64_t actual = tensor.dim(static_cast<int64_t>(axis));
      if (spec.dims[axis] >= 0 && actual != spec.dims[axis]) {
        return InvalidArgument(where + ": dim " + std::to_string(axis) + " must be " + std::to_string(spec.dims[axis]) +
                               " (" + InputSpecToString(spec) + "), got shape " + ShapeToString(tensor.shape()));
      }
      const std::string& param = spec.dim_params[axis];
      if (spec.dims[axis] >= 0 || param.empty()) continue;
      auto [symbol, inserted] = symbols.emplace(param, std::make_pair(actual, spec.name));
      if (!inserted && symbol->second.first != actual) {
        return InvalidArgument(where + ": dim '" + param + "' is " + std::to_string(actual) + " here but " +
                               std::to_string(symbol->second.first) + " in input '" + symbol->second.second + "'");
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
