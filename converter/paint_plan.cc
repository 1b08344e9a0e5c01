#include "converter/painter.h"

namespace onnx_amp::paint_internal {

std::string Painter::ReasonText(const Unit& unit) const {
  const UnitReason& reason = unit.reason;
  switch (reason.kind) {
    case ReasonKind::kText: return reason.text < 0 ? std::string() : reason_texts_[reason.text];
    case ReasonKind::kClass:
      return std::string(PrecisionClassName(reason.precision_class)) + ": " +
             std::string(refs_[unit.node_ref].node_class.reason);
    case ReasonKind::kCastKept: return "Cast(to=float): kept float32, not every consumer is low";
    case ReasonKind::kDownstreamOfDeny: return "float32: downstream of deny node '" + Label(reason.from) + "'";
    case ReasonKind::kBetweenAllows:
      return "low: between allow nodes '" + Label(reason.from) + "' and '" + Label(reason.to) + "'";
    case ReasonKind::kInferAfterAllow: return "low: bfloat16 infer op fed by allow node '" + Label(reason.from) + "'";
    case ReasonKind::kNextToLow: return "low: clear op next to low node '" + Label(reason.from) + "'";
    case ReasonKind::kCastRetargeted: return "low: Cast(to=float) retargeted, every consumer is low";
  }
  return std::string();
}

// A unit that is still neither deny nor allow keeps float32; say why.
std::string Painter::FinalReason(const Unit& unit) const {
  if (!unit.eligible || unit.allow || unit.deny || unit.cast_output) return ReasonText(unit);
  switch (unit.precision_class) {
    case PrecisionClass::kInfer: return "float32: infer op not between low nodes";
    case PrecisionClass::kClear: return "float32: clear op with no low neighbour";
    case PrecisionClass::kAllow:
    case PrecisionClass::kDeny:
    case PrecisionClass::kFixedFp32: return ReasonText(unit);
  }
  return ReasonText(unit);
}

// Moves the input's values into the plan with `changed` applied (no copy of every
// value); TypeOf has nothing to read after this.
void Painter::ApplyTypeChanges(const std::vector<std::pair<int, DType>>& changed) {
  plan_.values = std::move(values_);
  for (const auto& [id, dtype] : changed) plan_.values.set_type(id, dtype);
}

void Painter::FillPlan() {
  const DType low = plan_.low_type;
  std::vector<std::pair<int, DType>> changed;  // dtype of each value (by id) after conversion
  changed.reserve(refs_.size() + value_units_.size());
  plan_.node_order.reserve(refs_.size());
  plan_.nodes.reserve(refs_.size());
  plan_.slot_types.resize(slot_values_.size());
  for (const NodeRef& ref : refs_) {
    const onnx::NodeProto& node = *ref.node;
    NodePlan node_plan;
    node_plan.graph = ref.graph;
    node_plan.node_class = ref.node_class;
    node_plan.slots = ref.slots;
    node_plan.inputs = ref.inputs;
    node_plan.outputs = ref.outputs;
    bool any_low = false;
    const Unit* first = nullptr;
    const Unit* first_low = nullptr;
    // Inputs first, then outputs, as the slots lie.
    const int outputs = ref.OutputSlot(0);
    for (int slot = ref.slots; slot < outputs + node_plan.outputs; ++slot) {
      const int u = slot_units_[slot];
      DType t = low;
      if (u < 0) {
        t = TypeOfValue(slot_values_[slot]);
      } else {
        const Unit& unit = units_[u];
        if (first == nullptr) first = &unit;
        if (!unit.allow) {
          t = DType::kFloat32;
        } else {
          any_low = true;
          if (first_low == nullptr) first_low = &unit;
        }
      }
      plan_.slot_types[slot] = t;
      if (slot >= outputs && slot_values_[slot] >= 0) changed.emplace_back(slot_values_[slot], t);
    }
    if (any_low) {
      node_plan.compute_type = low;
      if (with_reasons_) node_plan.reason = FinalReason(*first_low);
    } else if (first != nullptr) {
      node_plan.compute_type = DType::kFloat32;
      if (with_reasons_) node_plan.reason = FinalReason(*first);
    } else if (with_reasons_) {
      node_plan.reason = "no float32 tensors";
    }
    plan_.node_order.push_back(&node);
    plan_.nodes.push_back(std::move(node_plan));
  }
  for (const auto& [name, u] : value_units_) {
    const int id = values_.Find(name);
    if (units_[u].allow && id >= 0) changed.emplace_back(id, low);
  }

  // Main-graph inputs that are not kept take the low dtype when a consumer reads it low.
  const onnx::GraphProto& main = *plan_.graphs[0].graph;
  for (const auto& input : main.input()) {
    const std::string& name = input.name();
    const int id = values_.Find(name);
    if (TypeOfValue(id) != DType::kFloat32 || policy_.keep_io_types.Keeps(name) || ProducerOf(id).node_ref >= 0) {
      continue;
    }
    auto it = consumers_.find(id);
    if (it == consumers_.end()) continue;
    for (const Slot& slot : it->second) {
      if (plan_.InputTypes(slot.node_ref)[slot.index] == low) {  // refs_ are in node_order
        changed.emplace_back(id, low);
        break;
      }
    }
  }
  // The input's dtype of every graph output, read before the changes apply.
  std::vector<std::vector<DType>> original_outputs(plan_.graphs.size());
  for (size_t g = 0; g < plan_.graphs.size(); ++g) {
    for (const auto& output : plan_.graphs[g].graph->output()) original_outputs[g].push_back(TypeOf(output.name()));
  }
  ApplyTypeChanges(changed);
  for (int g = 0; g < static_cast<int>(plan_.graphs.size()); ++g) {
    GraphScope& scope = plan_.graphs[g];
    for (int k = 0; k < scope.graph->output_size(); ++k) {
      const std::string& name = scope.graph->output(k).name();
      const DType original = original_outputs[g][k];
      if (g != 0) {  // a body output takes its cluster's colour
        auto member = body_output_units_.find({g, k});
        const bool low_member = member != body_output_units_.end() && units_[member->second].allow;
        scope.output_types.push_back(low_member ? low : original);
      } else if (policy_.keep_io_types.Keeps(name)) {
        scope.output_types.push_back(original);
      } else {
        scope.output_types.push_back(plan_.values.TypeOf(name));
      }
    }
  }
  plan_.slot_values = std::move(slot_values_);
  plan_.unknown_ops.assign(unknown_ops_.begin(), unknown_ops_.end());
}

}  // namespace onnx_amp::paint_internal
