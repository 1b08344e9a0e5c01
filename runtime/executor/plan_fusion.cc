#include "runtime/executor/plan_fusion.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string_view>

#include "runtime/core/onnx_domain.h"
#include "runtime/graph/graph_view.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/cast_target.h"

namespace onnx_amp {

SlotUses CountSlotUses(const GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads) {
  SlotUses uses{std::vector<int>(plan.slot_names.size(), 0), std::vector<int>(plan.slot_names.size(), -1)};
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int slot : plan.steps[s].inputs) {
      if (slot >= 0) ++uses.readers[slot];
    }
    for (int slot : outer_reads[s]) ++uses.readers[slot];
    for (int slot : plan.steps[s].outputs) {
      if (slot >= 0) uses.producer[slot] = static_cast<int>(s);
    }
  }
  for (int slot : plan.output_slots) ++uses.readers[slot];
  return uses;
}

int64_t IntAttribute(const onnx::NodeProto& node, const char* name, int64_t fallback) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name && attribute.type() == onnx::AttributeProto::INT) return attribute.i();
  }
  return fallback;
}

const Tensor* InitializerOf(const GraphPlan& plan, int slot) {
  if (slot < 0 || plan.slot_kinds[slot] != SlotKind::kInitializer) return nullptr;
  for (const auto& [init_slot, tensor] : plan.initializers) {
    if (init_slot == slot) return &tensor;
  }
  return nullptr;
}

int FoldableProducer(const GraphPlan& plan, const SlotUses& uses, const std::vector<bool>& keep, int value) {
  if (value < 0 || plan.slot_kinds[value] != SlotKind::kNodeOutput || uses.readers[value] != 1 || keep[value]) return -1;
  const int source = uses.producer[value];
  if (source < 0) return -1;
  const PlanStep& step = plan.steps[source];
  return !step.outputs.empty() && step.outputs[0] == value ? source : -1;
}

namespace {

// Whether `step` is a Cast to float32 (ai.onnx, one input, one output).
bool CastsToFloat32(const PlanStep& step) {
  return step.inputs.size() == 1 && step.outputs.size() == 1 && CastTarget(*step.node) == DType::kFloat32;
}

// Whether `step` is an ai.onnx MaxPool of 2x2 windows at stride 2 without pads, dilations
// or ceil mode, whose Indices output no one reads or keeps.
bool PoolsPlain2x2(const PlanStep& step, const SlotUses& uses, const std::vector<bool>& keep) {
  const onnx::NodeProto& node = *step.node;
  if (node.op_type() != "MaxPool" || !IsOnnxDomain(node.domain()) || step.inputs.empty() || step.outputs.empty() ||
      step.outputs[0] < 0 || !step.subgraphs.empty()) {
    return false;
  }
  for (size_t k = 1; k < step.outputs.size(); ++k) {
    if (step.outputs[k] >= 0 && (uses.readers[step.outputs[k]] > 0 || keep[step.outputs[k]])) return false;
  }
  const auto all_equal = [](const onnx::AttributeProto& attribute, int64_t value) {
    for (const int64_t v : attribute.ints()) {
      if (v != value) return false;
    }
    return true;
  };
  bool kernel_2x2 = false, stride_2 = false;
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    const std::string& name = attribute.name();
    if (name == "kernel_shape") kernel_2x2 = attribute.ints_size() == 2 && all_equal(attribute, 2);
    else if (name == "strides") stride_2 = attribute.ints_size() == 2 && all_equal(attribute, 2);
    else if (name == "pads" && !all_equal(attribute, 0)) return false;
    else if (name == "dilations" && !all_equal(attribute, 1)) return false;
    else if (name == "ceil_mode" && attribute.i() != 0) return false;
    else if (name == "auto_pad" && attribute.s() != "NOTSET" && attribute.s() != "VALID") return false;
  }
  return kernel_2x2 && stride_2;
}

// The int64 values of `slot` where it is a constant of at most one dimension: an
// initializer, or the output of an ai.onnx Constant step. False where it is not.
bool ConstantInts(const GraphPlan& plan, const SlotUses& uses, int slot, std::vector<int64_t>& values) {
  if (slot < 0) return false;
  Tensor decoded;
  const Tensor* tensor = InitializerOf(plan, slot);
  if (tensor == nullptr) {
    const int producer = uses.producer[slot];
    if (producer < 0) return false;
    const onnx::NodeProto& node = *plan.steps[producer].node;
    if (node.op_type() != "Constant" || !IsOnnxDomain(node.domain())) return false;
    Expected<Tensor> value = ConstantNodeValue(node);
    if (!value.ok()) return false;
    decoded = std::move(*value);
    tensor = &decoded;
  }
  if (tensor->dtype() != DType::kInt64 || tensor->rank() > 1) return false;
  const int64_t* data = tensor->data<int64_t>();
  values.assign(data, data + tensor->num_elements());
  return true;
}

// n where `step` is an ai.onnx ReduceSum with keepdims over axes {0, ..., n-1} given as
// constants (the input from opset 13, the attribute before); 0 otherwise.
int LeadingAxesSummed(const GraphPlan& plan, const SlotUses& uses, const PlanStep& step) {
  const onnx::NodeProto& node = *step.node;
  if (node.op_type() != "ReduceSum" || !IsOnnxDomain(node.domain()) || step.inputs.empty() || step.outputs.size() != 1 ||
      step.outputs[0] < 0 || IntAttribute(node, "keepdims", 1) != 1) {
    return 0;
  }
  std::vector<int64_t> axes;
  if (step.opset >= 13) {
    if (step.inputs.size() < 2 || !ConstantInts(plan, uses, step.inputs[1], axes)) return 0;
  } else {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.name() == "axes") axes.assign(attribute.ints().begin(), attribute.ints().end());
    }
  }
  std::sort(axes.begin(), axes.end());
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] != static_cast<int64_t>(k)) return 0;
  }
  return static_cast<int>(axes.size());
}

}  // namespace

void FuseWideningCasts(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& cast = plan.steps[s];
    if (!cast.subgraphs.empty() || cast.outputs.empty() || cast.outputs[0] < 0 || !CastsToFloat32(cast)) continue;
    const int value = cast.inputs[0];
    const int source_index = FoldableProducer(plan, uses, keep, value);
    if (source_index < 0) continue;
    PlanStep& source = plan.steps[source_index];
    if (!source.kernel || !source.kernel->fuses_widening_cast || source.widened_output ||
        source.activation.kind != FusedActivationKind::kNone || !IsLowPrecision(plan.view->ValueType(plan.slot_names[value]))) {
      continue;
    }
    source.widened_output = true;
    source.outputs[0] = cast.outputs[0];
    source.op_label += "+Cast";
    folded[s] = true;
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

void FuseReluGrads(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& grad = plan.steps[s];
    const onnx::NodeProto& node = *grad.node;
    if (node.op_type() != "ReluGrad" || node.domain() != kOnnxAmpDomain || grad.inputs.size() != 2 ||
        grad.outputs.size() != 1 || grad.outputs[0] < 0) {
      continue;
    }
    const int source_index = FoldableProducer(plan, uses, keep, grad.inputs[0]);
    if (source_index < 0) continue;
    PlanStep& source = plan.steps[source_index];
    if (!source.kernel || !source.kernel->fuses_relu_grad || source.relu_grad || source.device != grad.device ||
        source.inputs.size() < 2 || source.inputs[1] != grad.inputs[1] || grad.inputs[1] < 0) {
      continue;
    }
    source.relu_grad = true;
    source.outputs[0] = grad.outputs[0];
    source.op_label += "+ReluGrad";
    folded[s] = true;
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

void MoveRelusIntoReaders(GraphPlan& plan, const std::vector<std::vector<int>>& outer_reads,
                          const std::vector<bool>& keep) {
  if (plan.channels_last.empty() || plan.view == nullptr) return;
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  constexpr std::string_view kReluLabel = "+Relu";
  for (PlanStep& reader : plan.steps) {
    if (reader.device != DeviceKind::kCpu || reader.kernel == nullptr || !reader.kernel->reads_through_relu ||
        reader.relu_input || reader.inputs.empty()) {
      continue;
    }
    const int value = reader.inputs[0];
    const int producer_index = FoldableProducer(plan, uses, keep, value);
    if (producer_index < 0 || !plan.channels_last[value]) continue;
    PlanStep& producer = plan.steps[producer_index];
    const std::string_view label = producer.op_label;
    const bool conv_relu = producer.device == DeviceKind::kCpu && producer.kernel != nullptr &&
                           producer.kernel->op_type == "Conv" && producer.activation.kind == FusedActivationKind::kRelu &&
                           label.size() > kReluLabel.size() && label.substr(label.size() - kReluLabel.size()) == kReluLabel;
    if (!conv_relu || plan.view->ValueType(plan.slot_names[value]) != DType::kFloat32) continue;
    producer.activation = FusedActivation{};
    producer.op_label.resize(producer.op_label.size() - kReluLabel.size());
    reader.relu_input = true;
    reader.op_label = "Relu+" + reader.op_label;
  }
}

void FuseMaxPoolsIntoConvs(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  if (plan.channels_last.empty()) return;
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& pool = plan.steps[s];
    if (pool.device != DeviceKind::kCpu || pool.relu_input || !PoolsPlain2x2(pool, uses, keep)) continue;
    const int value = pool.inputs[0];
    const int producer_index = FoldableProducer(plan, uses, keep, value);
    if (producer_index < 0 || !plan.channels_last[value] || !plan.channels_last[pool.outputs[0]]) continue;
    PlanStep& conv = plan.steps[producer_index];
    if (conv.device != DeviceKind::kCpu || conv.kernel == nullptr || conv.kernel->pools_output == nullptr ||
        conv.pooled_output || conv.addend_input >= 0 || conv.widened_output || conv.inputs.size() < 2) {
      continue;
    }
    const Tensor* weights = InitializerOf(plan, conv.inputs[1]);
    if (weights == nullptr || !conv.kernel->pools_output(*weights, IntAttribute(*conv.node, "group", 1))) continue;
    conv.pooled_output = true;
    conv.outputs[0] = pool.outputs[0];
    conv.op_label += "+MaxPool";
    folded[s] = true;
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

void FuseLeadingAxisSums(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  const auto channels_last = [&](int slot) { return !plan.channels_last.empty() && plan.channels_last[slot]; };
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& sum = plan.steps[s];
    if (sum.device != DeviceKind::kCpu || !sum.subgraphs.empty()) continue;
    const int axes = LeadingAxesSummed(plan, uses, sum);
    const int value = sum.inputs.empty() ? -1 : sum.inputs[0];
    if (axes == 0 || value < 0 || plan.slot_kinds[value] != SlotKind::kNodeOutput || uses.producer[value] < 0 ||
        channels_last(value) || channels_last(sum.outputs[0])) {
      continue;
    }
    PlanStep& producer = plan.steps[uses.producer[value]];
    if (producer.device != DeviceKind::kCpu || producer.kernel == nullptr || !producer.kernel->sums_leading_axes ||
        producer.summed_leading_axes != 0 || producer.outputs.size() != 1 || producer.outputs[0] != value) {
      continue;
    }
    producer.summed_leading_axes = axes;
    producer.outputs.push_back(sum.outputs[0]);
    producer.op_label += "+ReduceSum";
    folded[s] = true;
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

void RemoveFoldedSteps(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& folded) {
  size_t kept = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (folded[s]) continue;
    if (kept != s) {
      plan.steps[kept] = std::move(plan.steps[s]);
      outer_reads[kept] = std::move(outer_reads[s]);
    }
    ++kept;
  }
  plan.steps.resize(kept);
  outer_reads.resize(kept);
}

}  // namespace onnx_amp
