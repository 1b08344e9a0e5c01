#include "runtime/train/update_graph.h"

#include <cmath>
#include <set>

#include "runtime/core/onnx_domain.h"
#include "runtime/train/graph_builder_util.h"

namespace onnx_amp {
namespace {

// IsNaN-13, IsInf-10 and Or-7 are current at opset 17.
constexpr int64_t kDefaultOpset = 17;
constexpr int64_t kIrVersion = 8;

// The update node of one parameter, with the optimizer's hyper-parameters written out;
// `copy` ("" for none) is the parameter's low-precision copy, rewritten by the node.
void AddUpdateNode(onnx::GraphProto& graph, const OptimizerConfig& c, const std::string& parameter,
                   const std::string& gradient, const std::vector<std::string>& slots,
                   const std::vector<std::string>& new_slots, const std::string& copy, bool in_place) {
  const onnx::AttributeProto in_place_attribute = MakeAttribute("in_place", int64_t{in_place ? 1 : 0});
  std::vector<std::string> inputs = {parameter, gradient};
  std::vector<std::string> outputs = {parameter + ".new"};
  outputs.insert(outputs.end(), new_slots.begin(), new_slots.end());
  // The copy comes after every input and slot output the op declares (absent ones "").
  const auto add_copy = [&](size_t declared_slots) {
    if (copy.empty()) return;
    inputs.push_back(copy);
    outputs.resize(1 + declared_slots);
    outputs.push_back(copy + ".new");
  };
  const std::string name = "update." + parameter;
  switch (c.kind) {
    case OptimizerKind::kSgd:
      inputs.push_back(slots.empty() ? "" : slots[0]);
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateSkip});
      add_copy(1);
      AddNode(graph, name, "SgdUpdate", kOnnxAmpDomain, inputs, outputs,
              {MakeAttribute("momentum", c.momentum), MakeAttribute("nesterov", int64_t{c.nesterov ? 1 : 0}),
               in_place_attribute});
      return;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      inputs.insert(inputs.end(), slots.begin(), slots.end());
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateStep, kUpdateSkip});
      add_copy(2);
      const bool decoupled = c.kind == OptimizerKind::kAdamW;
      Attributes attributes = {MakeAttribute("beta1", c.beta1), MakeAttribute("beta2", c.beta2),
                               MakeAttribute("epsilon", c.epsilon), in_place_attribute};
      if (decoupled) attributes.push_back(MakeAttribute("weight_decay", c.weight_decay));
      AddNode(graph, name, decoupled ? "AdamWUpdate" : "AdamUpdate", kOnnxAmpDomain, inputs, outputs,
              std::move(attributes));
      return;
    }
    case OptimizerKind::kRmsprop:
      inputs.insert(inputs.end(), slots.begin(), slots.end());
      inputs.insert(inputs.end(), {kUpdateLearningRate, kUpdateSkip});
      add_copy(1);
      AddNode(graph, name, "RmspropUpdate", kOnnxAmpDomain, inputs, outputs,
              {MakeAttribute("rho", c.rho), MakeAttribute("epsilon", c.epsilon), in_place_attribute});
      return;
  }
}

}  // namespace

Expected<UpdateGraph> BuildUpdateGraph(const std::vector<NamedTensor>& parameters, const OptimizerConfig& optimizer,
                                       float clip_norm, bool in_place, bool scaled,
                                       const std::vector<DType>& copy_types) {
  if (parameters.empty()) return InvalidArgument("the update graph needs at least one parameter");
  if (!copy_types.empty() && copy_types.size() != parameters.size()) {
    return InvalidArgument("the update graph takes one copy type per parameter");
  }
  if (!(clip_norm >= 0.0f) || !std::isfinite(clip_norm)) return InvalidArgument("--clip-norm must be finite and >= 0");
  const int num_slots = SlotCount(optimizer);

  UpdateGraph result;
  onnx::ModelProto& model = result.model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("onnx-amp");
  model.add_opset_import()->set_version(kDefaultOpset);
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain(std::string(kOnnxAmpDomain));
  custom->set_version(1);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("update");

  std::set<std::string> names;
  auto input = [&](const std::string& name, int32_t elem_type, const Shape& shape) {
    names.insert(name);
    SetTensorValueInfo(*graph.add_input(), name, elem_type, shape);
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
    const DType copy_type = copy_types.empty() ? DType::kUndefined : copy_types[result.copy_inputs.size()];
    if (copy_type != DType::kUndefined && copy_type != DType::kFloat16 && copy_type != DType::kBFloat16) {
      return InvalidArgument("parameter '" + parameter.name + "': a weight copy is float16 or bfloat16");
    }
    result.copy_inputs.push_back(copy_type == DType::kUndefined ? "" : parameter.name + ".copy");
    if (copy_type != DType::kUndefined) input(result.copy_inputs.back(), ToOnnx(copy_type), parameter.tensor.shape());
    unscale_inputs.push_back(gradient);
    unscale_outputs.push_back(gradient + ".unscaled");
    clip_inputs.push_back(gradient + ".unscaled");
    clipped.push_back(gradient + ".clipped");
  }
  if (names.size() != static_cast<size_t>(graph.input_size())) {
    return InvalidArgument(
        "parameter names collide with the update graph's inputs (a parameter named '<p>_grad', '<p>.copy', "
        "'<p>.slot0' or 'update.*')");
  }

  AddNode(graph, "update.unscale_and_check", "UnscaleAndCheck", kOnnxAmpDomain, unscale_inputs, unscale_outputs,
          {MakeAttribute("scaled", int64_t{scaled ? 1 : 0}),
           MakeAttribute("in_place", int64_t{in_place ? 1 : 0})});
  AddNode(graph, "update.loss_is_nan", "IsNaN", "", {kUpdateLoss}, {"update.loss_is_nan"});
  AddNode(graph, "update.loss_is_inf", "IsInf", "", {kUpdateLoss}, {"update.loss_is_inf"});
  AddNode(graph, "update.loss_non_finite", "Or", "", {"update.loss_is_nan", "update.loss_is_inf"},
          {"update.loss_non_finite"});
  AddNode(graph, "update.skip", "Or", "", {"update.found_inf", "update.loss_non_finite"}, {kUpdateSkip});
  AddNode(graph, "update.clip", "GlobalNormClip", kOnnxAmpDomain, clip_inputs, clipped,
          {MakeAttribute("max_norm", clip_norm)});

  SetTensorValueInfo(*graph.add_output(), kUpdateSkip, onnx::TensorProto::BOOL, {});
  SetTensorValueInfo(*graph.add_output(), kUpdateFirstNonFinite, onnx::TensorProto::INT64, {});
  for (size_t p = 0; p < parameters.size(); ++p) {
    const std::string& name = parameters[p].name;
    std::vector<std::string> slots;
    std::vector<std::string> new_slots;
    for (int k = 0; k < num_slots; ++k) {
      slots.push_back(result.slot_inputs[k][p]);
      new_slots.push_back(slots.back() + ".new");
    }
    const std::string& copy = result.copy_inputs[p];
    AddUpdateNode(graph, optimizer, name, clipped[p], slots, new_slots, copy, in_place);
    SetTensorValueInfo(*graph.add_output(), name + ".new", onnx::TensorProto::FLOAT, parameters[p].tensor.shape());
    for (const std::string& slot : new_slots) {
      SetTensorValueInfo(*graph.add_output(), slot, onnx::TensorProto::FLOAT, parameters[p].tensor.shape());
    }
    if (!copy.empty()) {
      SetTensorValueInfo(*graph.add_output(), copy + ".new", ToOnnx(copy_types[p]), parameters[p].tensor.shape());
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
