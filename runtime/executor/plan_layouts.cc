#include "runtime/executor/plan_layouts.h"

#include <onnx/onnx_pb.h>

#include "runtime/executor/plan_fusion.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

bool DilatesWindow(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() != "dilations") continue;
    for (int64_t dilation : attribute.ints()) {
      if (dilation != 1) return true;
    }
  }
  return false;
}

// What step `step` takes channels-last: its kernel's KernelDef::channels_last, or nothing
// for steps off the CPU, with bodies, or whose node the kernel's channels-last loops do
// not cover (a dilated max pool or its gradient, a max pool whose Indices are read).
ChannelsLastSupport SupportOf(const PlanStep& step, const SlotUses& uses) {
  if (step.device != DeviceKind::kCpu || step.kernel == nullptr || !step.subgraphs.empty()) return {};
  const KernelDef& kernel = *step.kernel;
  const bool max_pool = kernel.op_type == "MaxPool", max_pool_grad = kernel.op_type == "MaxPoolGrad";
  if ((max_pool || max_pool_grad) && DilatesWindow(*step.node)) return {};
  if (max_pool) {
    for (size_t i = 1; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0 && uses.readers[step.outputs[i]] > 0) return {};
    }
  }
  return kernel.channels_last;
}

// Whether the graph's shape inference gives slots `a` and `b` the same known shape.
bool SameKnownShape(const GraphPlan& plan, int a, int b) {
  const ValueInfo* first = plan.view->FindValue(plan.slot_names[a]);
  const ValueInfo* second = plan.view->FindValue(plan.slot_names[b]);
  if (first == nullptr || second == nullptr || !first->shape || !second->shape) return false;
  const ValueShape& x = *first->shape;
  const ValueShape& y = *second->shape;
  if (x.dims != y.dims || x.dim_params != y.dim_params) return false;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    const bool named = i < x.dim_params.size() && !x.dim_params[i].empty();
    if (x.dims[i] < 0 && !named) return false;
  }
  return true;
}

// Whether `slot` may be stored channels-last as far as its kind, dtype and rank go: a
// value a step produces (not one a fold left without a producer).
bool Candidate(const GraphPlan& plan, const SlotUses& uses, const std::vector<bool>& keep,
               const std::vector<bool>& read_outside, int slot) {
  if (plan.slot_kinds[slot] != SlotKind::kNodeOutput || uses.producer[slot] < 0 || keep[slot] || read_outside[slot]) {
    return false;
  }
  const std::string& name = plan.slot_names[slot];
  const ValueInfo* info = plan.view->FindValue(name);
  if (info == nullptr || !info->shape || info->shape->dims.size() != 4) return false;
  const DType type = plan.view->ValueType(name);
  return type == DType::kFloat32 || IsLowPrecision(type);
}

// Clears the slots of `channels_last` that step `step` cannot take in that order, given
// the others' current order. Returns whether any was cleared.
bool Restrict(const GraphPlan& plan, const PlanStep& step, const ChannelsLastSupport& support,
              std::vector<bool>& channels_last) {
  bool changed = false;
  const auto clear = [&](int slot) {
    if (slot < 0 || !channels_last[slot]) return;
    channels_last[slot] = false;
    changed = true;
  };
  const int out = step.outputs.empty() ? -1 : step.outputs[0];
  const auto same_order = [&](size_t i) { return i < 32 && ((support.same_order_inputs >> i) & 1u) != 0; };
  const auto any_order = [&](size_t i) {
    return static_cast<int>(i) == step.addend_input || (i < 32 && ((support.any_order_inputs >> i) & 1u) != 0);
  };
  // Output 0 first: the inputs tied to its order follow it below.
  if (out >= 0 && channels_last[out]) {
    bool allowed = false;
    switch (support.output) {
      case ChannelsLastOutput::kNever: break;
      case ChannelsLastOutput::kAnyOrder: allowed = true; break;
      case ChannelsLastOutput::kIfInput0:
        allowed = !step.inputs.empty() && step.inputs[0] >= 0 && channels_last[step.inputs[0]];
        break;
      case ChannelsLastOutput::kLikeOrderedInputs:
        allowed = true;
        for (size_t i = 0; i < step.inputs.size(); ++i) {
          const int slot = step.inputs[i];
          if (same_order(i) && slot >= 0 && (!channels_last[slot] || !SameKnownShape(plan, slot, out))) allowed = false;
        }
        break;
    }
    if (!allowed) clear(out);
  }
  for (size_t i = 1; i < step.outputs.size(); ++i) clear(step.outputs[i]);
  const bool out_channels_last = out >= 0 && channels_last[out];
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const int slot = step.inputs[i];
    if (slot < 0 || !channels_last[slot] || any_order(i)) continue;
    if (same_order(i) && out_channels_last) continue;
    clear(slot);
  }
  return changed;
}

}  // namespace

void AssignChannelsLast(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads,
                        const std::vector<bool>& keep) {
  if (plan.view == nullptr) return;
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  // Graph outputs and values bodies read leave the steps' hands as they are stored.
  std::vector<bool> read_outside(plan.slot_names.size(), false);
  for (int slot : plan.output_slots) read_outside[slot] = true;
  for (const std::vector<int>& reads : outer_reads) {
    for (int slot : reads) read_outside[slot] = true;
  }
  // Every candidate starts channels-last; a step that cannot take one of its values in
  // that order (as the others stand) sends it back to NCHW, until every step can take
  // all of its values. Slots only leave, so this ends, at the largest consistent set.
  std::vector<bool> channels_last(plan.slot_names.size(), false);
  for (int slot = 0; slot < static_cast<int>(plan.slot_names.size()); ++slot) {
    channels_last[slot] = Candidate(plan, uses, keep, read_outside, slot);
  }
  std::vector<ChannelsLastSupport> support;
  support.reserve(plan.steps.size());
  for (const PlanStep& step : plan.steps) support.push_back(SupportOf(step, uses));
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < plan.steps.size(); ++s) changed |= Restrict(plan, plan.steps[s], support[s], channels_last);
  }
  for (bool layout : channels_last) {
    if (layout) {
      plan.channels_last = std::move(channels_last);
      return;
    }
  }
}

}  // namespace onnx_amp
