#include "runtime/onnx/node_type_rules.h"

#include <exception>
#include <optional>
#include <string_view>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/inference_guards.h"

namespace onnx_amp {
namespace {

const std::string& ParamName(const onnx::OpSchema& schema, FormalSide side, int index) {
  const auto& params = side == FormalSide::kInput ? schema.inputs() : schema.outputs();
  return params[std::min<size_t>(index, params.size() - 1)].GetName();
}

// The schema's type variables bound to the known types of `inputs` and `outputs`, or
// the first broken constraint (as ONNX's CheckInputOutputType finds them).
struct Binding {
  std::vector<ValueType> variables;
  std::string problem;
};

Binding Bind(const onnx::OpSchema& schema, const SchemaSignature& signature, std::span<const ValueType> inputs,
             std::span<const ValueType> outputs) {
  Binding binding;
  binding.variables.resize(signature.variables.size());
  auto bind = [&](FormalSide side, int index, const ValueType& type) {
    const FormalParam* param = signature.Param(side, index);
    if (param == nullptr || !type.known() || !binding.problem.empty()) return;
    const char* what = side == FormalSide::kInput ? "input " : "output ";
    if (!param->allowed.Admits(type)) {
      binding.problem = what + std::to_string(index) + " ('" + ParamName(schema, side, index) + "') is " +
                        TypeString(type) + ", which " + schema.Name() + "-" + std::to_string(schema.SinceVersion()) +
                        " does not admit";
      return;
    }
    if (param->variable < 0 || !param->homogeneous) return;
    ValueType& bound = binding.variables[param->variable];
    if (!bound.known()) {
      bound = type;
    } else if (bound != type) {
      binding.problem = what + std::to_string(index) + " ('" + ParamName(schema, side, index) + "') is " +
                        TypeString(type) + " but " + signature.variables[param->variable] + " is already " +
                        TypeString(bound);
    }
  };
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) bind(FormalSide::kInput, i, inputs[i]);
  for (int o = 0; o < static_cast<int>(outputs.size()); ++o) bind(FormalSide::kOutput, o, outputs[o]);
  return binding;
}

// Types the outputs a bound variable or a single-type parameter fixes, where unknown.
void FillOutputs(const onnx::NodeProto& node, const SchemaSignature& signature, const Binding& binding,
                 std::vector<ValueType>& outputs) {
  for (int o = 0; o < node.output_size(); ++o) {
    if (outputs[o].known() || node.output(o).empty()) continue;
    const FormalParam* param = signature.Param(FormalSide::kOutput, o);
    if (param == nullptr) continue;
    if (std::optional<ValueType> only = param->allowed.Only()) {
      outputs[o] = *only;
    } else if (param->variable >= 0 && param->homogeneous) {
      outputs[o] = binding.variables[param->variable];
    }
  }
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

// What ONNX's inference functions of Cast, Constant and ConstantOfShape give, without
// their overhead (these ops are common); nullopt for other ops, or when the function
// would fail.
std::optional<ValueType> AttributeType(const onnx::NodeProto& node) {
  if (!IsOnnxDomain(node.domain()) || node.output_size() != 1) return std::nullopt;
  auto valid = [](int64_t code) -> std::optional<ValueType> {
    if (code <= 0 || !onnx::TensorProto_DataType_IsValid(static_cast<int>(code))) return std::nullopt;
    return ValueType::Tensor(static_cast<int32_t>(code));
  };
  const std::string& op = node.op_type();
  if (op == "Cast") {
    const onnx::AttributeProto* to = FindAttribute(node, "to");
    if (to == nullptr || to->type() != onnx::AttributeProto::INT) return std::nullopt;
    return valid(to->i());
  }
  if (op == "ConstantOfShape") {
    const onnx::AttributeProto* value = FindAttribute(node, "value");
    return value == nullptr ? ValueType::Tensor(DType::kFloat32) : valid(value->t().data_type());
  }
  if (op != "Constant" || node.attribute_size() != 1) return std::nullopt;
  const onnx::AttributeProto& value = node.attribute(0);
  const std::string& name = value.name();
  if (name == "value") return valid(value.t().data_type());
  if (name == "sparse_value") return valid(value.sparse_tensor().values().data_type());
  if (name == "value_float" || name == "value_floats") return ValueType::Tensor(DType::kFloat32);
  if (name == "value_int" || name == "value_ints") return ValueType::Tensor(DType::kInt64);
  if (name == "value_string" || name == "value_strings") return ValueType::Tensor(DType::kString);
  return std::nullopt;
}

// An ONNX InferenceContext holding input types only (no shapes, no data, no subgraph
// inference), for running an op's own inference function to learn its output types.
class TypesOnlyContext final : public onnx::InferenceContext {
 public:
  TypesOnlyContext(const onnx::NodeProto& node, std::span<const ValueType> inputs)
      : node_(node), inputs_(inputs.size()), known_(inputs.size()), outputs_(node.output_size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      SetTypeProto(inputs[i], inputs_[i]);
      known_[i] = inputs_[i].value_case() != onnx::TypeProto::VALUE_NOT_SET;
    }
  }
  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    return FindAttribute(node_, name);
  }
  size_t getNumInputs() const override { return inputs_.size(); }
  // Out-of-range indices throw, as ONNX's own context does: variadic schemas' functions
  // (Adam, Loop) index inputs and outputs by their own count and dereference what they get.
  const onnx::TypeProto* getInputType(size_t index) const override {
    if (index >= inputs_.size()) fail_type_inference("input ", index, " is out of range");
    return known_[index] ? &inputs_[index] : nullptr;
  }
  bool hasInput(size_t index) const override {
    return index < inputs_.size() && !node_.input(static_cast<int>(index)).empty();
  }
  const onnx::TensorProto* getInputData(size_t) const override { return nullptr; }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t index) override {
    if (index >= outputs_.size()) fail_type_inference("output ", index, " is out of range");
    return &outputs_[index];
  }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  const std::vector<onnx::TypeProto>& outputs() const { return outputs_; }

 private:
  const onnx::NodeProto& node_;
  std::vector<onnx::TypeProto> inputs_;
  std::vector<bool> known_;
  std::vector<onnx::TypeProto> outputs_;
};

// Runs the schema's inference function on the input types; the problem when it fails
// (a node that does not match its schema is not handed to it: some functions crash on
// those).
std::string RunInferenceFunction(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                                 std::span<const ValueType> inputs, std::vector<ValueType>& outputs) {
  GuardShapeInference();
  TypesOnlyContext context(node, inputs);
  try {
    schema.Verify(node);
    schema.GetTypeAndShapeInferenceFunction()(context);
  } catch (const std::exception& error) {
    return error.what();
  }
  for (size_t o = 0; o < outputs.size(); ++o) outputs[o] = ValueTypeOf(context.outputs()[o]);
  return "";
}

}  // namespace

NodeTypes InferNodeTypes(const onnx::NodeProto& node, const onnx::OpSchema* schema,
                         std::span<const ValueType> inputs) {
  NodeTypes result;
  result.outputs.resize(node.output_size());
  if (schema == nullptr) return result;
  const SchemaSignature& signature = SignatureOf(*schema);
  auto untyped = [&](std::string problem, bool constraint_broken = true) {
    result.outputs.assign(node.output_size(), ValueType{});
    result.problem = std::move(problem);
    result.constraint_broken = constraint_broken;
    return std::move(result);
  };
  bool inputs_known = true;
  for (int i = 0; i < node.input_size(); ++i) inputs_known &= node.input(i).empty() || inputs[i].known();

  if (schema->has_type_and_shape_inference_function()) {
    std::optional<ValueType> attribute_type;
    if (inputs_known) {  // the common case: the rules give what ONNX's function would
      Binding binding = Bind(*schema, signature, inputs, {});
      if (!binding.problem.empty()) return untyped(binding.problem);
      attribute_type = AttributeType(node);
      if (attribute_type) result.outputs[0] = *attribute_type;
      FillOutputs(node, signature, binding, result.outputs);
      bool all_typed = true;
      for (int o = 0; o < node.output_size(); ++o) all_typed &= node.output(o).empty() || result.outputs[o].known();
      // Outputs typed by the binding alone agree with it; an attribute's type is checked below.
      if (all_typed && !attribute_type) return result;
    }
    if (!attribute_type) {
      result.outputs.assign(node.output_size(), ValueType{});
      std::string problem = RunInferenceFunction(node, *schema, inputs, result.outputs);
      if (!problem.empty()) return untyped(problem, /*constraint_broken=*/false);
    }
  }
  // The constraints must hold and fill what is left, as ONNX's CheckInputOutputType does.
  Binding binding = Bind(*schema, signature, inputs, result.outputs);
  if (!binding.problem.empty()) return untyped(binding.problem);
  FillOutputs(node, signature, binding, result.outputs);
  return result;
}

std::string CheckTypeConstraints(const onnx::NodeProto&, const onnx::OpSchema& schema,
                                 std::span<const ValueType> inputs, std::span<const ValueType> outputs) {
  return Bind(schema, SignatureOf(schema), inputs, outputs).problem;
}

}  // namespace onnx_amp
