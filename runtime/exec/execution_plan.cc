#include "runtime/exec/execution_plan.h"

#include <onnx/onnx_pb.h>

#include <algorithm>

#include "ops/kernel_registry.h"
#include "runtime/graph/graph_view.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {
namespace {

// Unnamed nodes go by their index in the graph, as GraphView::scope_name() does.
std::string NodeLabel(const onnx::NodeProto& node, int index, const GraphView& view) {
  std::string label = (node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'") + " (" + node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") label += ", domain " + node.domain();
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

class PlanBuilder {
 public:
  PlanBuilder(const KernelRegistry& registry, DeviceKind device) : registry_(registry), device_(device) {}

  Expected<std::unique_ptr<GraphPlan>> Build(const GraphView& view) {
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

    // Step index of each slot's last read; graph outputs are read "after" every step.
    std::vector<int> last_use;
    const auto note_use = [&](int slot, int step) {
      if (static_cast<int>(last_use.size()) <= slot) last_use.resize(slot + 1, -1);
      last_use[slot] = std::max(last_use[slot], step);
    };

    for (int node_index : view.topological_order()) {
      const onnx::NodeProto& node = view.node(node_index);
      const int step_index = static_cast<int>(plan->steps.size());
      PlanStep step;
      step.node = &node;
      std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
      auto opset = view.opsets().find(domain);
      step.opset = opset == view.opsets().end() ? 0 : static_cast<int>(opset->second);
      step.kernel = registry_.Find(domain, node.op_type(), device_);
      if (step.kernel == nullptr) missing_.push_back(NodeLabel(node, node_index, view));

      for (const std::string& name : node.input()) {
        const int slot = name.empty() ? -1 : SlotForRead(*plan, name);
        if (slot >= 0) note_use(slot, step_index);
        step.inputs.push_back(slot);
      }
      for (const GraphView::Subgraph* sub : view.SubgraphsOf(node_index)) {
        ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GraphPlan> body, Build(*sub->view));
        for (const std::string& name : sub->view->outer_scope_reads()) note_use(SlotForRead(*plan, name), step_index);
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
    }

    const int after_all = static_cast<int>(plan->steps.size());
    for (const onnx::ValueInfoProto& output : graph.output()) {
      const int slot = SlotForRead(*plan, output.name());
      note_use(slot, after_all);
      plan->output_slots.push_back(slot);
    }
    last_use.resize(plan->slot_names.size(), -1);

    for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s) {
      PlanStep& step = plan->steps[s];
      for (int slot : step.outputs) {
        step.outputs_used.push_back(slot >= 0 && last_use[slot] >= 0);
        // An output nobody reads dies right after the step that made it.
        if (slot >= 0 && last_use[slot] < 0) step.release_after.push_back(slot);
      }
    }
    for (int slot = 0; slot < static_cast<int>(last_use.size()); ++slot) {
      if (plan->slot_kinds[slot] != SlotKind::kNodeOutput) continue;
      if (last_use[slot] >= 0 && last_use[slot] < after_all) plan->steps[last_use[slot]].release_after.push_back(slot);
    }
    return plan;
  }

  const std::vector<std::string>& missing() const { return missing_; }

 private:
  const KernelRegistry& registry_;
  DeviceKind device_;
  std::vector<std::string> missing_;
};

}  // namespace

Expected<std::unique_ptr<GraphPlan>> BuildGraphPlan(const GraphView& view, const KernelRegistry& registry,
                                                    DeviceKind device) {
  PlanBuilder builder(registry, device);
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GraphPlan> plan, builder.Build(view));
  if (!builder.missing().empty()) {
    std::string list;
    for (const std::string& label : builder.missing()) list += (list.empty() ? "" : ", ") + label;
    return Unsupported("no " + std::string(DeviceName(device)) + " kernel for " + std::to_string(builder.missing().size()) +
                       (builder.missing().size() == 1 ? " node: " : " nodes: ") + list);
  }
  return plan;
}

}  // namespace onnx_amp
