#include "runtime/executor/execution_plan.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <optional>

#include "ops/common/fused_activation.h"
#include "ops/kernel_registry.h"
#include "runtime/core/float16.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/executor/device_placement.h"
#include "runtime/executor/plan_fusion.h"
#include "runtime/executor/plan_layouts.h"
#include "runtime/executor/plan_rewrites.h"
#include "runtime/graph/graph_view.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {
namespace {

// Unnamed nodes go by their index in the graph, as GraphView::scope_name() does.
std::string NodeLabel(const onnx::NodeProto& node, int index, const GraphView& view) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "'" + name + "'".
  std::string label;
  if (node.name().empty()) {
    label.append(1, '#').append(std::to_string(index));
  } else {
    label.append(1, '\'').append(node.name()).append(1, '\'');
  }
  label.append(" (").append(node.op_type());
  if (!IsOnnxDomain(node.domain())) label += ", domain " + node.domain();
  label += ")";
  if (view.parent() != nullptr) label += " in " + view.scope_name();
  return label;
}

const char* DeviceName(DeviceKind device) {
  switch (device) {
    case DeviceKind::kCpu: return "CPU";
    case DeviceKind::kCuda: return "CUDA";
  }
  return "unknown";
}

int AddSlot(GraphPlan& plan, const std::string& name, SlotKind kind) {
  const int slot = static_cast<int>(plan.slot_names.size());
  plan.slot_names.push_back(name);
  plan.slot_kinds.push_back(kind);
  plan.slot_of.emplace(name, slot);
  if (kind == SlotKind::kOuterScope) plan.outer_slots.push_back(slot);
  return slot;
}

// The slot a read of `name` refers to; names not defined here come from outer scopes.
int SlotForRead(GraphPlan& plan, const std::string& name) {
  const int slot = plan.FindSlot(name);
  return slot >= 0 ? slot : AddSlot(plan, name, SlotKind::kOuterScope);
}

// The value of a scalar float32/float16/bfloat16 initializer as float (exact); nullopt
// for anything else (float64 bounds compute in double and stay unfused).
std::optional<float> ScalarInitializer(const GraphPlan& plan, int slot) {
  const Tensor* tensor = InitializerOf(plan, slot);
  if (tensor != nullptr && tensor->num_elements() == 1) {
    switch (tensor->dtype()) {
      case DType::kFloat32: return *tensor->data<float>();
      case DType::kFloat16: return tensor->data<Float16>()->ToFloat();
      case DType::kBFloat16: return tensor->data<BFloat16>()->ToFloat();
      case DType::kUndefined:
      case DType::kUInt8:
      case DType::kInt8:
      case DType::kUInt16:
      case DType::kInt16:
      case DType::kInt32:
      case DType::kInt64:
      case DType::kString:
      case DType::kBool:
      case DType::kFloat64:
      case DType::kUInt32:
      case DType::kUInt64:
      case DType::kComplex64:
      case DType::kComplex128:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

// The activation `step` computes, in the form a Conv/Gemm/MatMul kernel folds; nullopt
// for other ops and for Clip bounds that are not constant.
std::optional<FusedActivation> ActivationOf(const GraphPlan& plan, const PlanStep& step) {
  if (step.outputs.size() != 1 || step.outputs[0] < 0 || !step.subgraphs.empty()) return std::nullopt;
  return FusableActivation(*step.node, step.opset, [&](int input) { return ScalarInitializer(plan, step.inputs[input]); });
}

// Folds each activation step whose input is output 0 of a step with a fusing kernel,
// read by nothing else and not kept observable, into that step. `outer_reads` holds
// each step's outer-scope reads and is kept parallel to plan.steps.
void FuseActivations(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (PlanStep& step : plan.steps) {
    if (step.inputs.empty()) continue;
    const int source_index = FoldableProducer(plan, uses, keep, step.inputs[0]);
    if (source_index < 0) continue;
    PlanStep& source = plan.steps[source_index];
    if (!source.kernel || !source.kernel->fuses_activation || source.activation.kind != FusedActivationKind::kNone) {
      continue;
    }
    const std::optional<FusedActivation> activation = ActivationOf(plan, step);
    if (!activation) continue;
    source.activation = *activation;
    source.outputs[0] = step.outputs[0];
    source.op_label += "+" + step.node->op_type();
    folded[&step - plan.steps.data()] = true;
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

class PlanBuilder {
 public:
  PlanBuilder(const KernelRegistry& registry, DeviceKind device, const PlanOptions& options)
      : registry_(registry), device_(device), options_(options) {}

  // Bodies of control-flow nodes are planned with on_device false: they run on the CPU.
  Expected<std::unique_ptr<GraphPlan>> Build(const GraphView& view, bool on_device) {
    auto plan = std::make_unique<GraphPlan>();
    plan->view = &view;
    const onnx::GraphProto& graph = view.graph();

    for (const onnx::ValueInfoProto& input : graph.input()) {
      plan->input_slots.push_back(AddSlot(*plan, input.name(), SlotKind::kGraphInput));
    }
    for (const onnx::TensorProto& init : graph.initializer()) {
      int slot = plan->FindSlot(init.name());
      if (slot < 0) slot = AddSlot(*plan, init.name(), SlotKind::kInitializer);
      Expected<Tensor> tensor = TensorFromProto(init);
      if (!tensor.ok()) return tensor.status().WithContext("initializer of " + view.scope_name());
      plan->initializers.emplace_back(slot, std::move(tensor).value());
    }

    std::vector<std::vector<int>> outer_reads;  // per step: values its bodies read
    for (int node_index : view.topological_order()) {
      const onnx::NodeProto& node = view.node(node_index);
      PlanStep step;
      step.node = &node;
      step.op_label = node.op_type();
      std::string domain(CanonicalDomain(node.domain()));
      auto opset = view.opsets().find(domain);
      step.opset = opset == view.opsets().end() ? 0 : static_cast<int>(opset->second);
      if (on_device) step.kernel = DeviceKernel(view, node, domain);
      if (step.kernel != nullptr) step.device = device_;
      else step.kernel = registry_.Find(domain, node.op_type(), DeviceKind::kCpu);
      if (step.kernel == nullptr) missing_.push_back(NodeLabel(node, node_index, view));

      for (const std::string& name : node.input()) step.inputs.push_back(name.empty() ? -1 : SlotForRead(*plan, name));
      std::vector<int> reads;
      for (const GraphView::Subgraph* sub : view.SubgraphsOf(node_index)) {
        ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GraphPlan> body, Build(*sub->view, false));
        for (const std::string& name : sub->view->outer_scope_reads()) reads.push_back(SlotForRead(*plan, name));
        step.subgraphs.emplace_back(sub->attribute, body.get());
        plan->bodies.push_back(std::move(body));
      }
      for (const std::string& name : node.output()) {
        if (name.empty()) {
          step.outputs.push_back(-1);
          continue;
        }
        if (plan->FindSlot(name) >= 0) {
          return InvalidModel(view.scope_name() + ": value '" + name + "' is defined twice (node " +
                              NodeLabel(node, node_index, view) + ")");
        }
        step.outputs.push_back(AddSlot(*plan, name, SlotKind::kNodeOutput));
      }
      plan->steps.push_back(std::move(step));
      outer_reads.push_back(std::move(reads));
    }
    for (const onnx::ValueInfoProto& output : graph.output()) {
      plan->output_slots.push_back(SlotForRead(*plan, output.name()));
    }

    if (options_.fuse_activations) {
      // Captures name values of the main graph only.
      const bool main_graph = view.parent() == nullptr;
      std::vector<bool> keep(plan->slot_names.size(), main_graph && options_.keep_all_values);
      if (main_graph) {
        for (const std::string& name : options_.keep_values) {
          const int slot = plan->FindSlot(name);
          if (slot >= 0) keep[slot] = true;
        }
      }
      FoldBatchNormIntoConv(*plan, outer_reads, keep);
      FuseConvAdd(*plan, outer_reads, keep);
      FuseMatMulBias(*plan, outer_reads, keep);
      FuseActivations(*plan, outer_reads, keep);
      FuseWideningCasts(*plan, outer_reads, keep);
      FuseReluGrads(*plan, outer_reads, keep);
      if (options_.channels_last && !on_device) {
        AssignChannelsLast(*plan, outer_reads, keep);
        if (options_.share_batch_statistics) ShareBatchStatistics(*plan);
        FuseMaxPoolsIntoConvs(*plan, outer_reads, keep);
        MoveRelusIntoReaders(*plan, outer_reads, keep);
      }
      FuseLeadingAxisSums(*plan, outer_reads);
    }
    if (missing_.empty()) PlaceValues(*plan, outer_reads, on_device ? device_ : DeviceKind::kCpu);
    MarkLastUses(*plan, outer_reads);
    return plan;
  }

  const std::vector<std::string>& missing() const { return missing_; }

 private:
  // The device's kernel for `node` when it has one for the node's dtype (that of input
  // KernelDef::dtype_input, when known), else nullptr.
  const KernelDef* DeviceKernel(const GraphView& view, const onnx::NodeProto& node, const std::string& domain) const {
    if (options_.device_kernels == nullptr) return nullptr;
    const KernelDef* def = options_.device_kernels->Find(domain, node.op_type(), device_);
    if (def == nullptr || def->dtypes == 0 || def->dtype_input >= node.input_size()) return def;
    const DType dtype = view.ValueType(node.input(def->dtype_input));
    if (dtype == DType::kUndefined) return def;
    return (def->dtypes >> static_cast<int>(dtype)) & 1u ? def : nullptr;
  }

  // Fills outputs_used and release_after from each slot's last read; graph outputs are
  // read "after" every step.
  static void MarkLastUses(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads) {
    std::vector<int> last_use(plan.slot_names.size(), -1);
    const auto note_use = [&](int slot, int step) { last_use[slot] = std::max(last_use[slot], step); };
    for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
      for (int slot : plan.steps[s].inputs) {
        if (slot >= 0) note_use(slot, s);
      }
      for (int slot : outer_reads[s]) note_use(slot, s);
    }
    const int after_all = static_cast<int>(plan.steps.size());
    for (int slot : plan.output_slots) note_use(slot, after_all);

    for (PlanStep& step : plan.steps) {
      for (int slot : step.outputs) {
        step.outputs_used.push_back(slot >= 0 && last_use[slot] >= 0);
        // An output nobody reads dies right after the step that made it.
        if (slot >= 0 && last_use[slot] < 0) step.release_after.push_back(slot);
      }
    }
    for (int slot = 0; slot < static_cast<int>(last_use.size()); ++slot) {
      if (plan.slot_kinds[slot] != SlotKind::kNodeOutput) continue;
      if (last_use[slot] >= 0 && last_use[slot] < after_all) plan.steps[last_use[slot]].release_after.push_back(slot);
    }
  }

  const KernelRegistry& registry_;
  DeviceKind device_;
  const PlanOptions& options_;
  std::vector<std::string> missing_;
};

}  // namespace

Expected<std::unique_ptr<GraphPlan>> BuildGraphPlan(const GraphView& view, const KernelRegistry& registry,
                                                    DeviceKind device, const PlanOptions& options) {
  PlanBuilder builder(registry, device, options);
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GraphPlan> plan, builder.Build(view, device != DeviceKind::kCpu));
  if (!builder.missing().empty()) {
    std::string list;
    for (const std::string& label : builder.missing()) list += (list.empty() ? "" : ", ") + label;
    return Unsupported("no " + std::string(DeviceName(DeviceKind::kCpu)) + " kernel for " + std::to_string(builder.missing().size()) +
                       (builder.missing().size() == 1 ? " node: " : " nodes: ") + list);
  }
  return plan;
}

}  // namespace onnx_amp
