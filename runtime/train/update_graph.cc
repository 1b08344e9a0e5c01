#include "runtime/train/update_graph.h"

#include <cmath>
#include <set>

namespace onnx_amp {
namespace {

constexpr const char* kDomain = "ai.onnx_amp";
// IsNaN-13, IsInf-10 and Or-7 are current at opset 17.
constexpr int64_t kDefaultOpset = 17;
constexpr int64_t kIrVersion = 8;

void SetType(onnx::ValueInfoProto& info, const std::string& name, int32_t elem_type, const Shape& shape) {
  info.set_name(name);
  onnx::TypeProto_Tensor* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  onnx::TensorShapeProto* dims = type->mutable_shape();
  for (int64_t dim : shape) dims->add_dim()->set_dim_value(dim);
}

onnx::NodeProto* AddNode(onnx::GraphProto& graph, const std::string& name, const std::string& op, bool custom,
                         const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  onnx::NodeProto* node = graph.add_node();
  node->set_name(name);
  node->set_op_type(op);
  if (custom) node->set_domain(kDomain);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

void SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(value);
}

void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

// The update node of one parameter, with the optimizer's hyper-parameters written out.
void AddUpdateNode(onnx::GraphProto& graph, const OptimizerConfig& c, const std::string& parameter,
                   const std::string& gradient, const std::vector<std::string>& slots,
                   const std::vector<std::string>& new_slots) {
  std::vector<std::string> inputs = {parameter, gradient};
  std::vector<std::string> outputs = {parameter + ".new"};
  switch (c.kind) {
    case OptimizerKind::kSgd: {
      inputs.push_back(slots.empty() ? "" : slots[0]);
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateSkip});
      outputs.insert(outputs.end(), new_slots.begin(), new_slots.end());
      onnx::NodeProto* node = AddNode(graph, "update." + parameter, "SgdUpdate", true, inputs, outputs);
      SetFloat(*node, "momentum", c.momentum);
      SetInt(*node, "nesterov", c.nesterov ? 1 : 0);
      return;
    }
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      inputs.insert(inputs.end(), slots.begin(), slots.end());
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateStep, kUpdateSkip});
      outputs.insert(outputs.end(), new_slots.begin(), new_slots.end());
      const bool decoupled = c.kind == OptimizerKind::kAdamW;
      onnx::NodeProto* node =
          AddNode(graph, "update." + parameter, decoupled ? "AdamWUpdate" : "AdamUpdate", true, inputs, outputs);
      SetFloat(*node, "beta1", c.beta1);
      SetFloat(*node, "beta2", c.beta2);
      SetFloat(*node, "epsilon", c.epsilon);
      if (decoupled) SetFloat(*node, "weight_decay", c.weight_decay);
      return;
    }
    case OptimizerKind::kRmsprop: {
      inputs.insert(inputs.end(), slots.begin(), slots.end());
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateSkip});
      outputs.insert(outputs.end(), new_slots.begin(), new_slots.end());
      onnx::NodeProto* node = AddNode(graph, "update." + parameter, "RmspropUpdate", true, inputs, outputs);
      SetFloat(*node, "rho", c.rho);
      SetFloat(*node, "epsilon", c.epsilon);
      return;
    }
  }
}

}  // namespace

Expected<UpdateGraph> BuildUpdateGraph(const std::vector<NamedTensor>& parameters, const OptimizerConfig& optimizer,
                                       float clip_norm) {
  if (parameters.empty()) return InvalidArgument("the update graph needs at least one parameter");
  if (!(clip_norm >= 0.0f) || !std::isfinite(clip_norm)) return InvalidArgument("--clip-norm must be finite and >= 0");
  const int num_slots = SlotCount(optimizer);

  UpdateGraph result;
  onnx::ModelProto& model = result.model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("onnx-amp");
  model.add_opset_import()->set_version(kDefaultOpset);
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain(kDomain);
  custom->set_version(1);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("update");

  std::set<std::string> names;
  auto input = [&](const std::string& name, int32_t elem_type, const Shape& shape) {
    names.insert(name);
    SetType(*graph.add_input(), name, elem_type, shape);
  };
  input(kUpdateScale, onnx::TensorProto::FLOAT, {});
  input(kUpdateMicroBatches, onnx::TensorProto::INT64, {});
  input(kUpdateLoss, onnx::TensorProto::FLOAT, {});
  input(kUpdateLearningRate, onnx::TensorProto::FLOAT, {});
  input(kUpdateStep, onnx::TensorProto::INT64, {});

  std::vector<std::string> unscale_inputs = {kUpdateScale};
  std::vector<std::string> unscale_outputs = {"update.found_inf", kUpdateFirstNonFinite};
  std::vector<std::string> clip_inputs = {kUpdateMicroBatches};
  std::vector<std::string> clipped;
  for (const NamedTensor& parameter : parameters) {
    if (parameter.tensor.dtype() != DType::kFloat32) {
      return InvalidArgument("parameter '" + parameter.name + "' is not float32");
    }
    const std::string gradient = parameter.name + "_grad";
    result.gradient_inputs.push_back(gradient);
    input(gradient, onnx::TensorProto::FLOAT, parameter.tensor.shape());
    input(parameter.name, onnx::TensorProto::FLOAT, parameter.tensor.shape());
    for (int k = 0; k < num_slots; ++k) {
      result.slot_inputs[k].push_back(parameter.name + ".slot" + std::to_string(k));
      input(result.slot_inputs[k].back(), onnx::TensorProto::FLOAT, parameter.tensor.shape());
    }
    unscale_inputs.push_back(gradient);
    unscale_outputs.push_back(gradient + ".unscaled");
    clip_inputs.push_back(gradient + ".unscaled");
    clipped.push_back(gradient + ".clipped");
  }
  if (names.size() != static_cast<size_t>(graph.input_size())) {
    return InvalidArgument(
        "parameter names collide with the update graph's inputs (a parameter named '<p>_grad', "
        "'<p>.slot0' or 'update.*')");
  }

  AddNode(graph, "update.unscale_and_check", "UnscaleAndCheck", true, unscale_inputs, unscale_outputs);
  AddNode(graph, "update.loss_is_nan", "IsNaN", false, {kUpdateLoss}, {"update.loss_is_nan"});
  AddNode(graph, "update.loss_is_inf", "IsInf", false, {kUpdateLoss}, {"update.loss_is_inf"});
  AddNode(graph, "update.loss_non_finite", "Or", false, {"update.loss_is_nan", "update.loss_is_inf"},
          {"update.loss_non_finite"});
  AddNode(graph, "update.skip", "Or", false, {"update.found_inf", "update.loss_non_finite"}, {kUpdateSkip});
  SetFloat(*AddNode(graph, "update.clip", "GlobalNormClip", true, clip_inputs, clipped), "max_norm", clip_norm);

  SetType(*graph.add_output(), kUpdateSkip, onnx::TensorProto::BOOL, {});
  SetType(*graph.add_output(), kUpdateFirstNonFinite, onnx::TensorProto::INT64, {});
  for (size_t p = 0; p < parameters.size(); ++p) {
    const std::string& name = parameters[p].name;
    std::vector<std::string> slots;
    std::vector<std::string> new_slots;
    for (int k = 0; k < num_slots; ++k) {
      slots.push_back(result.slot_inputs[k][p]);
      new_slots.push_back(slots.back() + ".new");
    }
    AddUpdateNode(graph, optimizer, name, clipped[p], slots, new_slots);
    SetType(*graph.add_output(), name + ".new", onnx::TensorProto::FLOAT, parameters[p].tensor.shape());
    for (const std::string& slot : new_slots) {
      SetType(*graph.add_output(), slot, onnx::TensorProto::FLOAT, parameters[p].tensor.shape());
    }
  }

  // Every produced value must be new: a parameter named like a generated value would
  // be read where its namesake is meant.
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& output : node.output()) {
      if (!output.empty() && !names.insert(output).second) {
        return InvalidArgument("the update graph's value '" + output +
                               "' is also the name of a parameter or of "
                               "another parameter's generated value");
      }
    }
  }
  return result;
}

}  // namespace onnx_amp
