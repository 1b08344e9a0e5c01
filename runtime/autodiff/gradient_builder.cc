#include "runtime/autodiff/gradient_builder.h"

#include <algorithm>
#include <utility>

#include "runtime/graph/graph_view.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {

onnx::AttributeProto MakeAttribute(const std::string& name, int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto MakeAttribute(const std::string& name, float value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

onnx::AttributeProto MakeAttribute(const std::string& name, const std::string& value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::STRING);
  attribute.set_s(value);
  return attribute;
}

onnx::AttributeProto MakeAttribute(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute.add_ints(value);
  return attribute;
}

onnx::AttributeProto MakeAttribute(const std::string& name, const onnx::TensorProto& value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::TENSOR);
  *attribute.mutable_t() = value;
  return attribute;
}

std::string NameTable::Fresh(const std::string& base) {
  std::string name = base;
  for (int n = 1; names_.count(name) != 0; ++n) name = base + "_" + std::to_string(n);
  names_.insert(name);
  return name;
}

GradientContext::GradientContext(onnx::NodeProto& forward_node, const GraphView& view, int64_t opset,
                                 int64_t default_opset, std::vector<std::string> output_grads,
                                 std::vector<bool> needs_input_grad, std::vector<std::string> input_grad_names,
                                 NameTable& names, std::vector<onnx::NodeProto>& emitted,
                                 std::set<std::string>& used_domains)
    : node_(forward_node),
      view_(view),
      opset_(opset),
      default_opset_(default_opset),
      output_grads_(std::move(output_grads)),
      needs_input_grad_(std::move(needs_input_grad)),
      input_grad_names_(std::move(input_grad_names)),
      names_(names),
      emitted_(emitted),
      used_domains_(used_domains),
      prefix_(forward_node.name() + "_grad") {}

namespace {
const std::string kEmpty;
}  // namespace

const std::string& GradientContext::I(int index) const {
  return index < node_.input_size() ? node_.input(index) : kEmpty;
}

const std::string& GradientContext::O(int index) const {
  return index < node_.output_size() ? node_.output(index) : kEmpty;
}

const std::string& GradientContext::GO(int index) const {
  return index < static_cast<int>(output_grads_.size()) ? output_grads_[index] : kEmpty;
}

bool GradientContext::NeedsGI(int index) const {
  return index < static_cast<int>(needs_input_grad_.size()) && needs_input_grad_[index];
}

const std::string& GradientContext::GI(int index) const {
  ONNX_AMP_ASSERT(NeedsGI(index), "GI() of an input that needs no gradient");
  return input_grad_names_[index];
}

std::string GradientContext::EnsureOutput(int index) {
  while (node_.output_size() <= index) node_.add_output("");
  if (node_.output(index).empty()) {
    node_.set_output(index, names_.Fresh(node_.name() + "_out" + std::to_string(index)));
  }
  return node_.output(index);
}

DType GradientContext::ValueType(const std::string& name) const { return view_.ValueType(name); }

std::optional<int64_t> GradientContext::Rank(const std::string& name) const {
  const ValueInfo* info = view_.LookupValue(name);
  if (info == nullptr || !info->shape) return std::nullopt;
  return static_cast<int64_t>(info->shape->dims.size());
}

std::optional<Shape> GradientContext::StaticShape(const std::string& name) const {
  const ValueInfo* info = view_.LookupValue(name);
  if (info == nullptr || !info->shape) return std::nullopt;
  for (int64_t dim : info->shape->dims) {
    if (dim < 0) return std::nullopt;
  }
  return info->shape->dims;
}

std::optional<std::vector<int64_t>> GradientContext::ConstantInts(const std::string& name) const {
  const onnx::TensorProto* proto = nullptr;
  for (const onnx::TensorProto& initializer : view_.graph().initializer()) {
    if (initializer.name() == name) proto = &initializer;
  }
  const ValueInfo* info = view_.FindValue(name);
  if (proto == nullptr && info != nullptr && info->source == ValueSource::kNodeOutput) {
    const onnx::NodeProto& producer = view_.node(info->producer);
    if (producer.op_type() == "Constant" && (producer.domain().empty() || producer.domain() == "ai.onnx")) {
      for (const onnx::AttributeProto& attribute : producer.attribute()) {
        if (attribute.name() == "value" && attribute.has_t()) proto = &attribute.t();
      }
    }
  }
  if (proto == nullptr) return std::nullopt;
  Expected<Tensor> tensor = TensorFromProto(*proto);
  if (!tensor.ok()) return std::nullopt;
  std::vector<int64_t> values;
  if (tensor->dtype() == DType::kInt64) {
    values.assign(tensor->data<int64_t>(), tensor->data<int64_t>() + tensor->num_elements());
  } else if (tensor->dtype() == DType::kInt32) {
    values.assign(tensor->data<int32_t>(), tensor->data<int32_t>() + tensor->num_elements());
  } else {
    return std::nullopt;
  }
  return values;
}

const onnx::AttributeProto* GradientContext::Attr(std::string_view name) const {
  for (const onnx::AttributeProto& attribute : node_.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

int64_t GradientContext::AttrInt(std::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* attribute = Attr(name);
  return attribute != nullptr ? attribute->i() : fallback;
}

float GradientContext::AttrFloat(std::string_view name, float fallback) const {
  const onnx::AttributeProto* attribute = Attr(name);
  return attribute != nullptr ? attribute->f() : fallback;
}

std::string GradientContext::AttrString(std::string_view name, std::string_view fallback) const {
  const onnx::AttributeProto* attribute = Attr(name);
  return attribute != nullptr ? attribute->s() : std::string(fallback);
}

std::vector<int64_t> GradientContext::AttrInts(std::string_view name) const {
  const onnx::AttributeProto* attribute = Attr(name);
  if (attribute == nullptr) return {};
  return {attribute->ints().begin(), attribute->ints().end()};
}

Attributes GradientContext::CopyAttributes(const std::vector<std::string>& names) const {
  Attributes copies;
  for (const std::string& name : names) {
    if (const onnx::AttributeProto* attribute = Attr(name)) copies.push_back(*attribute);
  }
  return copies;
}

std::string GradientContext::NewValue(const std::string& hint) { return names_.Fresh(prefix_ + "/" + hint); }

void GradientContext::Emit(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, Attributes attributes,
                           std::string_view domain) {
  onnx::NodeProto& node = emitted_.emplace_back();
  node.set_name(names_.Fresh(prefix_ + "/" + op_type));
  node.set_op_type(op_type);
  if (!domain.empty()) {
    node.set_domain(std::string(domain));
    used_domains_.insert(std::string(domain));
  }
  for (const std::string& input : inputs) node.add_input(input);
  for (const std::string& output : outputs) node.add_output(output);
  for (onnx::AttributeProto& attribute : attributes) *node.add_attribute() = std::move(attribute);
}

std::string GradientContext::EmitValue(const std::string& op_type, const std::vector<std::string>& inputs,
                                       Attributes attributes, std::string_view domain) {
  std::string output = NewValue(op_type);
  Emit(op_type, inputs, {output}, std::move(attributes), domain);
  return output;
}

std::string GradientContext::ConstInts(const std::vector<int64_t>& values) {
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t value : values) tensor.add_int64_data(value);
  return EmitValue("Constant", {}, {MakeAttribute("value", tensor)});
}

std::string GradientContext::ConstScalar(double value, DType dtype) {
  // Stored as float32 and cast: one Constant form serves every floating dtype.
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_float_data(static_cast<float>(value));
  std::string constant = EmitValue("Constant", {}, {MakeAttribute("value", tensor)});
  if (dtype == DType::kFloat32) return constant;
  return CastTo(constant, dtype);
}

std::string GradientContext::ShapeOf(const std::string& value) { return EmitValue("Shape", {value}); }

std::string GradientContext::CastTo(const std::string& value, DType dtype) {
  return EmitValue("Cast", {value}, {MakeAttribute("to", static_cast<int64_t>(ToOnnx(dtype)))});
}

std::string GradientContext::ReduceSum(const std::string& value, const std::vector<int64_t>& axes, bool keepdims) {
  Attributes attributes = {MakeAttribute("keepdims", static_cast<int64_t>(keepdims ? 1 : 0))};
  if (default_opset_ < 13) {
    attributes.push_back(MakeAttribute("axes", axes));
    return EmitValue("ReduceSum", {value}, std::move(attributes));
  }
  return EmitValue("ReduceSum", {value, ConstInts(axes)}, std::move(attributes));
}

std::string GradientContext::Unsqueeze(const std::string& value, const std::vector<int64_t>& axes) {
  if (default_opset_ < 13) return EmitValue("Unsqueeze", {value}, {MakeAttribute("axes", axes)});
  return EmitValue("Unsqueeze", {value, ConstInts(axes)});
}

std::string GradientContext::Squeeze(const std::string& value, const std::vector<int64_t>& axes) {
  if (default_opset_ < 13) return EmitValue("Squeeze", {value}, {MakeAttribute("axes", axes)});
  return EmitValue("Squeeze", {value, ConstInts(axes)});
}

std::string GradientContext::ReshapeLike(const std::string& value, const std::string& like) {
  std::optional<Shape> shape = StaticShape(like);
  return EmitValue("Reshape", {value, shape ? ConstInts(*shape) : ShapeOf(like)});
}

Status GradientContext::Unbroadcast(const std::string& grad, std::optional<Shape> grad_shape, int64_t grad_rank,
                                    const std::string& input, const std::string& result) {
  std::optional<Shape> input_shape = StaticShape(input);
  if (grad_shape && input_shape) {
    const int64_t lead = grad_rank - static_cast<int64_t>(input_shape->size());
    if (lead < 0) return Error(ErrorCode::kInvalidModel, "input '" + input + "' has a higher rank than its result");
    std::vector<int64_t> axes;
    for (int64_t axis = 0; axis < grad_rank; ++axis) {
      if (axis < lead || ((*input_shape)[axis - lead] == 1 && (*grad_shape)[axis] != 1)) axes.push_back(axis);
    }
    if (axes.empty() && lead == 0) {
      Emit("Identity", {grad}, {result});
      return Status::Ok();
    }
    const std::string reduced = axes.empty() ? grad : ReduceSum(grad, axes, true);
    Emit("Reshape", {reduced, ConstInts(*input_shape)}, {result});
    return Status::Ok();
  }
  // Dynamic path: the input's shape left-padded with ones to the gradient's rank;
  // reduce where that shape is 1 and the gradient's is not.
  std::optional<int64_t> input_rank = Rank(input);
  if (!input_rank || default_opset_ < 13) {
    return Error(ErrorCode::kUnsupported, "undoing broadcasting to '" + input +
                                              "' needs its rank and opset >= 13 when shapes are symbolic");
  }
  const int64_t lead = grad_rank - *input_rank;
  if (lead < 0) return Error(ErrorCode::kInvalidModel, "input '" + input + "' has a higher rank than its result");
  const std::string input_shape_value = ShapeOf(input);
  std::string padded = input_shape_value;
  if (lead > 0) {
    padded = EmitValue("Concat", {ConstInts(std::vector<int64_t>(lead, 1)), input_shape_value},
                       {MakeAttribute("axis", int64_t{0})});
  }
  const std::string one = ConstInts({1});
  const std::string input_is_one = EmitValue("Equal", {padded, one});
  const std::string grad_not_one = EmitValue("Not", {EmitValue("Equal", {ShapeOf(grad), one})});
  const std::string mask = EmitValue("And", {input_is_one, grad_not_one});
  const std::string axes = EmitValue("Reshape", {EmitValue("NonZero", {mask}), ConstInts({-1})});
  const std::string reduced = EmitValue(
      "ReduceSum", {grad, axes},
      {MakeAttribute("keepdims", int64_t{1}), MakeAttribute("noop_with_empty_axes", int64_t{1})});
  Emit("Reshape", {reduced, input_shape_value}, {result});
  return Status::Ok();
}

Status GradientContext::UnbroadcastLike(const std::string& grad, const std::string& like, const std::string& input,
                                        const std::string& result) {
  std::optional<int64_t> rank = Rank(like);
  if (!rank) return Error(ErrorCode::kUnsupported, "the rank of '" + like + "' is unknown");
  return Unbroadcast(grad, StaticShape(like), *rank, input, result);
}

Status GradientContext::Error(ErrorCode code, const std::string& message) const {
  return Status(code, "gradient of node '" + node_.name() + "' (" + node_.op_type() + "): " + message);
}

}  // namespace onnx_amp
