#include "runtime/executor/plan_layouts.h"

#include <onnx/onnx_pb.h>

#include "runtime/core/onnx_domain.h"
#include "runtime/executor/plan_fusion.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

bool IsChannelsLastOp(const PlanStep& step, const char* op_type) {
  return step.device == DeviceKind::kCpu && step.kernel != nullptr && step.kernel->takes_channels_last &&
         step.subgraphs.empty() && step.node->op_type() == op_type && IsOnnxDomain(step.node->domain());
}

bool DilatesWindow(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() != "dilations") continue;
    for (int64_t dilation : attribute.ints()) {
      if (dilation != 1) return true;
    }
  }
  return false;
}

// A MaxPool whose kernel takes channels-last X: float32, float16 or bfloat16 (`x_type`),
// no dilation, and Indices absent or read by nobody.
bool TakesChannelsLastPool(const PlanStep& step, const SlotUses& uses, DType x_type) {
  const bool floating = x_type == DType::kFloat32 || IsLowPrecision(x_type);
  if (!IsChannelsLastOp(step, "MaxPool") || !floating || DilatesWindow(*step.node)) return false;
  for (size_t i = 1; i < step.outputs.size(); ++i) {
    if (step.outputs[i] >= 0 && uses.readers[step.outputs[i]] > 0) return false;
  }
  return true;
}

// Whether step `s` reads `slot` only where its kernel takes a channels-last value.
bool ReadsChannelsLast(const GraphPlan& plan, const SlotUses& uses, int s, int slot, DType type) {
  const PlanStep& step = plan.steps[s];
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] != slot) continue;
    const bool conv_data = IsChannelsLastOp(step, "Conv") && (i == 0 || static_cast<int>(i) == step.addend_input);
    const bool pool_data = i == 0 && TakesChannelsLastPool(step, uses, type);
    if (!conv_data && !pool_data) return false;
  }
  return true;
}

// Whether `slot` may be stored channels-last as far as its kind, dtype, rank and readers
// (`reading_steps`) go.
bool MayBeChannelsLast(const GraphPlan& plan, const SlotUses& uses, const std::vector<bool>& keep,
                       const std::vector<bool>& read_outside, const std::vector<int>& reading_steps, int slot) {
  if (plan.slot_kinds[slot] != SlotKind::kNodeOutput || keep[slot] || read_outside[slot]) return false;
  const std::string& name = plan.slot_names[slot];
  const ValueInfo* info = plan.view->FindValue(name);
  if (info == nullptr || !info->shape || info->shape->dims.size() != 4) return false;
  const DType type = plan.view->ValueType(name);
  if (type != DType::kFloat32 && !IsLowPrecision(type)) return false;
  for (int s : reading_steps) {
    if (!ReadsChannelsLast(plan, uses, s, slot, type)) return false;
  }
  return true;
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
  std::vector<std::vector<int>> reading_steps(plan.slot_names.size());
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
    for (int slot : plan.steps[s].inputs) {
      if (slot >= 0 && (reading_steps[slot].empty() || reading_steps[slot].back() != s)) reading_steps[slot].push_back(s);
    }
  }
  std::vector<bool> channels_last(plan.slot_names.size(), false);
  bool any = false;
  // Steps are in topological order: a MaxPool's input is decided before its output.
  for (const PlanStep& step : plan.steps) {
    if (step.outputs.empty() || step.outputs[0] < 0) continue;
    const int slot = step.outputs[0];
    const bool conv = IsChannelsLastOp(step, "Conv");
    const bool pool_of_channels_last =
        !step.inputs.empty() && step.inputs[0] >= 0 && channels_last[step.inputs[0]] &&
        TakesChannelsLastPool(step, uses, plan.view->ValueType(plan.slot_names[step.inputs[0]]));
    if ((conv || pool_of_channels_last) && MayBeChannelsLast(plan, uses, keep, read_outside, reading_steps[slot], slot)) {
      channels_last[slot] = true;
      any = true;
    }
  }
  if (any) plan.channels_last = std::move(channels_last);
}

}  // namespace onnx_amp
