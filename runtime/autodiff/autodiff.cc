// Reverse-mode autodiff over an ONNX graph. Only nodes on a path from a parameter to
// the loss are differentiated: a value is "differentiable" when it is floating and
// depends on a parameter, "needed" when the loss depends on it. Every node whose output
// is both gets its gradient rule run, in reverse topological order; each rule adds
// contributions to its inputs' gradients, summed once all consumers have run.
#include "runtime/autodiff/autodiff.h"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <onnx/checker.h>

#include "ops/gradient_context.h"
#include "ops/gradients.h"
#include "ops/onnx_amp_schemas.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

onnx::NodeProto MakeNode(NameTable& names, const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, Attributes attributes = {}) {
  onnx::NodeProto node;
  node.set_name(names.Fresh(op_type + "_autodiff"));
  node.set_op_type(op_type);
  for (const std::string& input : inputs) node.add_input(input);
  for (const std::string& output : outputs) node.add_output(output);
  for (onnx::AttributeProto& attribute : attributes) *node.add_attribute() = std::move(attribute);
  return node;
}

void SetTensorType(onnx::ValueInfoProto& info, const std::string& name, DType dtype,
                   const std::optional<ValueShape>& shape) {
  info.set_name(name);
  onnx::TypeProto_Tensor* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(ToOnnx(dtype));
  if (!shape) return;
  onnx::TensorShapeProto* proto = tensor->mutable_shape();
  for (size_t i = 0; i < shape->dims.size(); ++i) {
    onnx::TensorShapeProto_Dimension* dim = proto->add_dim();
    if (shape->dims[i] >= 0) {
      dim->set_dim_value(shape->dims[i]);
    } else if (i < shape->dim_params.size() && !shape->dim_params[i].empty()) {
      dim->set_dim_param(shape->dim_params[i]);
    }
  }
}

bool IsDifferentiableType(DType dtype) { return IsFloatingPoint(dtype); }

// Every value and node name of the graph, so fresh names never collide.
void ReserveNames(const onnx::GraphProto& graph, NameTable& names) {
  for (const onnx::ValueInfoProto& input : graph.input()) names.Reserve(input.name());
  for (const onnx::TensorProto& initializer : graph.initializer()) names.Reserve(initializer.name());
  for (const onnx::NodeProto& node : graph.node()) {
    if (!node.name().empty()) names.Reserve(node.name());
    for (const std::string& output : node.output()) names.Reserve(output);
  }
}

struct GradientPlan {
  std::string loss;
  std::vector<std::string> parameters;
  std::set<std::string> differentiable;  // floating values depending on a parameter
  std::set<std::string> needed;          // values the loss depends on
  std::vector<int> active;               // nodes to differentiate, reverse topological order
};

Expected<GradientPlan> PlanGradient(const GraphView& graph, const AutodiffOptions& options) {
  GradientPlan plan;
  plan.loss = options.loss;
  if (plan.loss.empty()) {
    if (graph.graph().output_size() != 1) {
      return InvalidArgument("the forward graph has " + std::to_string(graph.graph().output_size()) +
                             " outputs: name the loss");
    }
    plan.loss = graph.graph().output(0).name();
  }
  const ValueInfo* loss = graph.FindValue(plan.loss);
  if (loss == nullptr || !loss->is_graph_output) {
    return InvalidArgument("loss '" + plan.loss + "' is not an output of the graph");
  }
  if (!IsFloatingPoint(loss->dtype)) {
    return InvalidArgument("loss '" + plan.loss + "' is not floating (" + std::string(DTypeName(loss->dtype)) + ")");
  }
  if (loss->shape && (std::find(loss->shape->dims.begin(), loss->shape->dims.end(), -1) != loss->shape->dims.end() ||
                      NumElements(loss->shape->dims) != 1)) {
    return InvalidArgument("loss '" + plan.loss + "' is not a scalar");
  }

  plan.parameters = options.parameters;
  if (plan.parameters.empty()) {
    for (const onnx::TensorProto& initializer : graph.graph().initializer()) {
      const std::optional<DType> dtype = DTypeFromOnnx(initializer.data_type());
      if (dtype && IsDifferentiableType(*dtype)) plan.parameters.push_back(initializer.name());
    }
  }
  std::set<std::string> seen;
  for (const std::string& name : plan.parameters) {
    const ValueInfo* info = graph.FindValue(name);
    if (info == nullptr || (info->source != ValueSource::kInitializer && info->source != ValueSource::kGraphInput)) {
      return InvalidArgument("parameter '" + name + "' is no initializer or input of the graph");
    }
    if (!IsDifferentiableType(info->dtype)) {
      return InvalidArgument("parameter '" + name + "' is not floating (" + std::string(DTypeName(info->dtype)) + ")");
    }
    if (!seen.insert(name).second) return InvalidArgument("parameter '" + name + "' is listed twice");
  }

  const std::vector<int>& order = graph.topological_order();
  plan.differentiable.insert(plan.parameters.begin(), plan.parameters.end());
  for (int index : order) {
    const onnx::NodeProto& node = graph.node(index);
    bool reached = false;
    for (const std::string& input : node.input()) reached = reached || plan.differentiable.count(input) != 0;
    if (!reached) continue;
    for (const std::string& output : node.output()) {
      if (!output.empty() && IsDifferentiableType(graph.ValueType(output))) plan.differentiable.insert(output);
    }
  }
  plan.needed.insert(plan.loss);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const onnx::NodeProto& node = graph.node(*it);
    bool feeds_loss = false;
    bool active = false;
    for (const std::string& output : node.output()) {
      const bool needed = plan.needed.count(output) != 0;
      feeds_loss = feeds_loss || needed;
      active = active || (needed && plan.differentiable.count(output) != 0);
    }
    if (feeds_loss) {
      for (const std::string& input : node.input()) {
        if (!input.empty()) plan.needed.insert(input);
      }
    }
    if (active) plan.active.push_back(*it);
  }
  return plan;
}

// One error naming every node on the path whose op has no gradient rule.
Status CheckRulesExist(const GraphView& graph, const std::vector<int>& active) {
  std::string missing;
  int count = 0;
  for (int index : active) {
    const onnx::NodeProto& node = graph.node(index);
    if (FindGradientRule(node.domain(), node.op_type()) != nullptr) continue;
    missing += (count++ == 0 ? "" : ", ") + std::string("'") + node.name() + "' (" +
               (node.domain().empty() ? "" : node.domain() + ".") + node.op_type() + ")";
  }
  if (count == 0) return Status::Ok();
  return Unsupported("no gradient rule for " + std::to_string(count) +
                     " node(s) between the parameters and the loss: " + missing);
}

// The opset of `domain` ("" = default) imported by the model; 0 when absent.
int64_t OpsetOf(const OpsetMap& opsets, const std::string& domain) {
  auto it = opsets.find(std::string(CanonicalDomain(domain)));
  return it == opsets.end() ? 0 : it->second;
}

// The float32 seed input `seed` as a value of the loss's dtype and shape (loss scaling
// feeds the scale in float32): Cast and Reshape nodes appended to `backward` as needed.
std::string SeedValue(const std::string& seed, const ValueInfo& loss, NameTable& names,
                      std::vector<onnx::NodeProto>& backward) {
  std::string seed_value = seed;
  if (loss.dtype != DType::kFloat32) {
    const std::string cast = names.Fresh(seed + "_cast");
    backward.push_back(MakeNode(names, "Cast", {seed_value}, {cast},
                                {MakeAttribute("to", static_cast<int64_t>(ToOnnx(loss.dtype)))}));
    seed_value = cast;
  }
  if (loss.shape && !loss.shape->dims.empty()) {
    onnx::TensorProto shape;
    shape.set_data_type(onnx::TensorProto::INT64);
    shape.add_dims(static_cast<int64_t>(loss.shape->dims.size()));
    for (int64_t dim : loss.shape->dims) shape.add_int64_data(dim);
    const std::string shape_value = names.Fresh(seed + "_shape");
    backward.push_back(MakeNode(names, "Constant", {}, {shape_value}, {MakeAttribute("value", shape)}));
    const std::string reshaped = names.Fresh(seed + "_reshaped");
    backward.push_back(MakeNode(names, "Reshape", {seed_value, shape_value}, {reshaped}));
    seed_value = reshaped;
  }
  return seed_value;
}

// Appends Shape and ConstantOfShape nodes writing zeros shaped like `parameter` into `grad`.
Status AppendZeroGradient(const GraphView& graph, const std::string& parameter, const std::string& grad,
                          int64_t default_opset, NameTable& names, std::vector<onnx::NodeProto>& backward) {
  if (default_opset < 9) {
    return Unsupported("the loss does not depend on parameter '" + parameter +
                       "', whose zero gradient needs opset >= 9 (ConstantOfShape); " + UpgradeOpsetHint(9));
  }
  const DType dtype = graph.FindValue(parameter)->dtype;
  onnx::TensorProto zero;
  zero.set_data_type(ToOnnx(dtype));
  zero.add_dims(1);
  zero.set_raw_data(std::string(DTypeSize(dtype), '\0'));
  const std::string shape = names.Fresh(parameter + "_shape");
  backward.push_back(MakeNode(names, "Shape", {parameter}, {shape}));
  backward.push_back(MakeNode(names, "ConstantOfShape", {shape}, {grad}, {MakeAttribute("value", zero)}));
  return Status::Ok();
}

// Gives the gradient model its seed input, its outputs (the loss, the parameter
// gradients, and the other forward outputs when asked) and the opset imports of the
// domains its nodes use, then runs the ONNX checker on it.
Status FinishGradientModel(onnx::ModelProto& result, const GraphView& graph, const GradientPlan& plan,
                           const std::string& seed, const std::vector<std::string>& parameter_grads,
                           const std::set<std::string>& used_domains, const AutodiffOptions& options) {
  onnx::GraphProto& out_graph = *result.mutable_graph();
  onnx::ValueInfoProto* seed_input = out_graph.add_input();
  SetTensorType(*seed_input, seed, DType::kFloat32, ValueShape{});

  std::vector<onnx::ValueInfoProto> forward_outputs(out_graph.output().begin(), out_graph.output().end());
  out_graph.clear_output();
  for (const onnx::ValueInfoProto& output : forward_outputs) {
    if (output.name() == plan.loss) *out_graph.add_output() = output;
  }
  for (size_t i = 0; i < plan.parameters.size(); ++i) {
    const ValueInfo* info = graph.FindValue(plan.parameters[i]);
    SetTensorType(*out_graph.add_output(), parameter_grads[i], info->dtype, info->shape);
  }
  if (options.keep_forward_outputs) {
    for (const onnx::ValueInfoProto& output : forward_outputs) {
      if (output.name() != plan.loss) *out_graph.add_output() = output;
    }
  }
  for (const std::string& domain : used_domains) {
    bool imported = false;
    for (const onnx::OperatorSetIdProto& opset : result.opset_import()) imported = imported || opset.domain() == domain;
    if (imported) continue;
    onnx::OperatorSetIdProto* opset = result.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(1);
  }

  try {
    onnx::checker::check_model(result);
  } catch (const std::exception& e) {
    return InternalError(std::string("the gradient graph fails the ONNX checker: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

Expected<onnx::ModelProto> BuildGradientModel(const onnx::ModelProto& forward, const AutodiffOptions& options) {
  RegisterOnnxAmpOpSchemas();
  // Unnamed nodes get names first: backward node names and error messages use them.
  onnx::ModelProto base = forward;
  NameTable names;
  ReserveNames(base.graph(), names);
  for (onnx::NodeProto& node : *base.mutable_graph()->mutable_node()) {
    if (node.name().empty()) node.set_name(names.Fresh(node.op_type()));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<ModelView> view, BuildModelView(base));
  const GraphView& graph = view->main_graph();
  ONNX_AMP_ASSIGN_OR_RETURN(GradientPlan plan, PlanGradient(graph, options));
  ONNX_AMP_RETURN_IF_ERROR(CheckRulesExist(graph, plan.active));

  const std::string seed = plan.loss + "_grad";
  if (!names.Reserve(seed)) return InvalidArgument("the seed name '" + seed + "' is already used in the graph");
  std::vector<std::string> parameter_grads;
  for (const std::string& parameter : plan.parameters) {
    parameter_grads.push_back(parameter + "_grad");
    if (!names.Reserve(parameter_grads.back())) {
      return InvalidArgument("the gradient name '" + parameter_grads.back() + "' is already used in the graph");
    }
  }

  onnx::ModelProto result = base;
  onnx::GraphProto& out_graph = *result.mutable_graph();
  std::vector<onnx::NodeProto> backward;
  std::set<std::string> used_domains;
  std::map<std::string, std::vector<std::string>> contributions;

  contributions[plan.loss].push_back(SeedValue(seed, *graph.FindValue(plan.loss), names, backward));

  // The gradient of `value` from its contributions: "" for none, else one name.
  auto gradient_of = [&](const std::string& value, const std::string& target) -> std::string {
    std::vector<std::string>& parts = contributions[value];
    if (parts.empty()) return "";
    if (parts.size() == 1 && target.empty()) return parts[0];
    const std::string name = target.empty() ? names.Fresh(value + "_grad") : target;
    backward.push_back(MakeNode(names, parts.size() == 1 ? "Identity" : "Sum", parts, {name}));
    return name;
  };

  const int64_t default_opset = view->default_opset();
  for (int index : plan.active) {
    onnx::NodeProto& node = *out_graph.mutable_node(index);
    std::vector<std::string> output_grads;
    bool any = false;
    for (const std::string& output : node.output()) {
      output_grads.push_back(output.empty() || plan.differentiable.count(output) == 0 ? "" : gradient_of(output, ""));
      any = any || !output_grads.back().empty();
    }
    if (!any) continue;  // every consumer's rule gave zero
    std::vector<bool> needs;
    std::vector<std::string> input_grads;
    for (const std::string& input : node.input()) {
      needs.push_back(!input.empty() && plan.differentiable.count(input) != 0);
      input_grads.push_back(needs.back() ? names.Fresh(node.name() + "_grad/d_" + input) : "");
    }
    const size_t first_new = backward.size();
    GradientContext context(node, graph, OpsetOf(view->opsets(), node.domain()), default_opset, output_grads, needs,
                            input_grads, names, backward, used_domains);
    ONNX_AMP_RETURN_IF_ERROR(FindGradientRule(node.domain(), node.op_type())(context));
    std::set<std::string> produced;
    for (size_t i = first_new; i < backward.size(); ++i) {
      produced.insert(backward[i].output().begin(), backward[i].output().end());
    }
    for (size_t i = 0; i < input_grads.size(); ++i) {
      if (needs[i] && produced.count(input_grads[i]) != 0) contributions[node.input(static_cast<int>(i))].push_back(input_grads[i]);
    }
  }

  for (size_t i = 0; i < plan.parameters.size(); ++i) {
    const std::string& parameter = plan.parameters[i];
    if (!gradient_of(parameter, parameter_grads[i]).empty()) continue;
    // The loss does not depend on this parameter: its gradient is zero.
    ONNX_AMP_RETURN_IF_ERROR(
        AppendZeroGradient(graph, parameter, parameter_grads[i], default_opset, names, backward));
  }

  for (onnx::NodeProto& node : backward) *out_graph.add_node() = std::move(node);
  ONNX_AMP_RETURN_IF_ERROR(FinishGradientModel(result, graph, plan, seed, parameter_grads, used_domains, options));
  return result;
}

}  // namespace onnx_amp
