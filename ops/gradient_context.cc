#include "ops/gradient_context.h"

#include <algorithm>
#include <utility>

#include "runtime/core/onnx_domain.h"
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

std::optional<ValueShape> GradientContext::KnownShape(const std::string& name) const {
  const ValueInfo* info = view_.LookupValue(name);
  if (info == nullptr) return std::nullopt;
  return info->shape;
}

std::optional<std::vector<int64_t>> GradientContext::ConstantInts(const std::string& name) const {
  Expected<Tensor> tensor = InvalidModel("not a constant");
  for (const onnx::TensorProto& initializer : view_.graph().initializer()) {
    if (initializer.name() == name) tensor = TensorFromProto(initializer);
  }
  const ValueInfo* info = view_.FindValue(name);
  if (!tensor.ok() && info != nullptr && info->source == ValueSource::kNodeOutput) {
    const onnx::NodeProto& producer = view_.node(info->producer);
    if (producer.op_type() == "Constant" && IsOnnxDomain(producer.domain())) tensor = ConstantNodeValue(producer);
  }
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

namespace {

const std::string& DimParam(const ValueShape& shape, size_t axis) {
  return axis < shape.dim_params.size() ? shape.dim_params[axis] : kEmpty;
}

// The axes of `grad` that broadcasting added to `input`: the leading axes `input` lacks,
// and those where `input` has extent 1 and `grad` does not. nullopt when an unknown
// extent leaves an axis open. An input extent that is known and not 1 equals the
// gradient's (broadcasting allows nothing else); so does one with the gradient's
// symbolic name.
std::optional<std::vector<int64_t>> BroadcastAxes(const ValueShape& grad, const ValueShape& input) {
  const size_t lead = grad.dims.size() - input.dims.size();
  std::vector<int64_t> axes;
  for (size_t axis = 0; axis < lead; ++axis) axes.push_back(static_cast<int64_t>(axis));
  for (size_t i = 0; i < input.dims.size(); ++i) {
    const int64_t in = input.dims[i];
    const int64_t out = grad.dims[lead + i];
    if (in >= 0 && in != 1) continue;
    if (in == 1) {
      if (out < 0) return std::nullopt;
      if (out != 1) axes.push_back(static_cast<int64_t>(lead + i));
      continue;
    }
    const std::string& name = DimParam(input, i);
    if (out == 1 || (!name.empty() && name == DimParam(grad, lead + i))) continue;
    return std::nullopt;
  }
  return axes;
}

}  // namespace

Status GradientContext::Unbroadcast(const std::string& grad, const std::optional<ValueShape>& grad_shape,
                                    int64_t grad_rank, const std::string& input, const std::string& result) {
  const std::optional<ValueShape> input_shape = KnownShape(input);
  if (input_shape && grad_rank < static_cast<int64_t>(input_shape->dims.size())) {
    return Error(ErrorCode::kInvalidModel, "input '" + input + "' has a higher rank than its result");
  }
  std::optional<std::vector<int64_t>> known_axes;
  if (grad_shape && input_shape) known_axes = BroadcastAxes(*grad_shape, *input_shape);
  if (known_axes && known_axes->empty()) {
    Emit("Identity", {grad}, {result});
    return Status::Ok();
  }
  if (known_axes) {
    const std::optional<Shape> static_input = StaticShape(input);
    Emit("Reshape",
         {ReduceSum(grad, *known_axes, true), static_input ? ConstInts(*static_input) : ShapeOf(input)}, {result});
    return Status::Ok();
  }
  // Dynamic path: the input's shape left-padded with ones to the gradient's rank;
  // reduce where that shape is 1 and the gradient's is not.
  if (!input_shape) return Error(ErrorCode::kUnsupported, "undoing broadcasting to '" + input + "' needs its rank");
  ONNX_AMP_RETURN_IF_ERROR(
      NeedsOpset(13, "ReduceSum over axes found at run time, to undo broadcasting to '" + input + "'"));
  const int64_t lead = grad_rank - static_cast<int64_t>(input_shape->dims.size());
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
  return Unbroadcast(grad, KnownShape(like), *rank, input, result);
}

Status GradientContext::Error(ErrorCode code, const std::string& message) const {
  return Status(code, "gradient of node '" + node_.name() + "' (" + node_.op_type() + "): " + message);
}

Status GradientContext::NeedsOpset(int64_t minimum, std::string_view what) const {
  if (default_opset_ >= minimum) return Status::Ok();
  return Error(ErrorCode::kUnsupported, "needs opset >= " + std::to_string(minimum) + " (" + std::string(what) +
                                            "), the model has opset " + std::to_string(default_opset_) + "; " +
                                            UpgradeOpsetHint(minimum));
}

std::string UpgradeOpsetHint(int64_t opset) {
  const std::string n = std::to_string(opset);
  return "re-export the model at opset >= " + n + " or upgrade it first with `onnx-amp convert MODEL -o OUT " +
         "--policy float32 --opset " + n + "`";
}

}  // namespace onnx_amp
