#include "runtime/executor/plan_rewrites.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>

#include "ops/normalization/batch_statistics.h"
#include "runtime/core/float16.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/executor/plan_fusion.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

// The values of a float tensor as double (exact); nullopt for other dtypes.
std::optional<std::vector<double>> FloatValues(const Tensor& tensor) {
  const int64_t count = tensor.num_elements();
  std::vector<double> values(static_cast<size_t>(count));
  const DType dtype = tensor.dtype();
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::kFloat32) values[i] = tensor.data<float>()[i];
    else if (dtype == DType::kFloat64) values[i] = tensor.data<double>()[i];
    else if (dtype == DType::kFloat16) values[i] = tensor.data<Float16>()[i].ToFloat();
    else if (dtype == DType::kBFloat16) values[i] = tensor.data<BFloat16>()[i].ToFloat();
    else return std::nullopt;
  }
  return values;
}

// `values` rounded once to `dtype` (one of FloatValues' dtypes): float16 and bfloat16
// through float32, which changes no result a float32 intermediate could not represent.
Tensor TensorOf(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor tensor = Tensor::Empty(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kFloat32) tensor.data<float>()[i] = static_cast<float>(values[i]);
    else if (dtype == DType::kFloat64) tensor.data<double>()[i] = values[i];
    else if (dtype == DType::kFloat16) tensor.data<Float16>()[i] = Float16::FromFloat(static_cast<float>(values[i]));
    else tensor.data<BFloat16>()[i] = BFloat16::FromFloat(static_cast<float>(values[i]));
  }
  return tensor;
}

bool IsCpuOp(const PlanStep& step, const char* op_type) {
  return step.device == DeviceKind::kCpu && step.subgraphs.empty() && step.node->op_type() == op_type &&
         IsOnnxDomain(step.node->domain());
}

float FloatAttribute(const onnx::NodeProto& node, const char* name, float fallback) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name && attribute.type() == onnx::AttributeProto::FLOAT) return attribute.f();
  }
  return fallback;
}

// A CPU BatchNormalization of opset 9 or later with its five inputs (X, scale, B, mean, var).
bool IsCpuBatchNorm(const PlanStep& step) {
  return IsCpuOp(step, "BatchNormalization") && step.opset >= 9 && step.inputs.size() == 5;
}

// Whether a BatchNormalization normalizes with the batch's own statistics, by the kernel's
// rule: training_mode from opset 14, extra outputs before.
bool TrainsBatchNorm(const PlanStep& step) {
  return step.opset < 14 ? step.outputs.size() > 1 : IntAttribute(*step.node, "training_mode", 0) != 0;
}

// A BatchNormalization that normalizes with its stored statistics and writes only Y.
bool IsInferenceBatchNorm(const PlanStep& step) {
  if (!IsCpuBatchNorm(step) || TrainsBatchNorm(step)) return false;
  for (size_t i = 1; i < step.outputs.size(); ++i) {
    if (step.outputs[i] >= 0) return false;
  }
  return true;
}

// A new slot named `base`, or `base#2`, `base#3`, ... when the graph has that name.
int AddSlot(GraphPlan& plan, const std::string& base, SlotKind kind) {
  std::string name = base;
  for (int n = 2; plan.FindSlot(name) >= 0; ++n) name = base + "#" + std::to_string(n);
  const int slot = static_cast<int>(plan.slot_names.size());
  plan.slot_names.push_back(name);
  plan.slot_kinds.push_back(kind);
  plan.slot_of.emplace(name, slot);
  if (!plan.channels_last.empty()) plan.channels_last.push_back(false);
  return slot;
}

int AddInitializer(GraphPlan& plan, const std::string& base, Tensor tensor) {
  const int slot = AddSlot(plan, base, SlotKind::kInitializer);
  plan.initializers.emplace_back(slot, std::move(tensor));
  return slot;
}

// Folds `norm` into `conv` when every parameter is a constant of the right size; false
// (and nothing changed) otherwise.
bool FoldInto(GraphPlan& plan, PlanStep& conv, const PlanStep& norm) {
  const Tensor* weights = InitializerOf(plan, conv.inputs[1]);
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  const Tensor* bias = has_bias ? InitializerOf(plan, conv.inputs[2]) : nullptr;
  if (weights == nullptr || weights->rank() < 3 || (has_bias && bias == nullptr)) return false;
  const int64_t channels = weights->dim(0);
  if (channels == 0 || (bias != nullptr && (bias->dtype() != weights->dtype() || bias->num_elements() != channels))) {
    return false;
  }
  std::vector<std::vector<double>> parameters;  // scale, B, mean, var
  for (int i = 1; i <= 4; ++i) {
    const Tensor* tensor = InitializerOf(plan, norm.inputs[i]);
    if (tensor == nullptr || tensor->num_elements() != channels) return false;
    std::optional<std::vector<double>> values = FloatValues(*tensor);
    if (!values) return false;
    parameters.push_back(std::move(*values));
  }
  std::optional<std::vector<double>> w = FloatValues(*weights);
  if (!w) return false;
  std::vector<double> b(static_cast<size_t>(channels), 0.0);
  if (bias != nullptr) b = *FloatValues(*bias);

  const double epsilon = FloatAttribute(*norm.node, "epsilon", 1e-5f);
  const int64_t per_channel = weights->num_elements() / channels;
  for (int64_t c = 0; c < channels; ++c) {
    const double s = parameters[0][c] / std::sqrt(parameters[3][c] + epsilon);
    for (int64_t i = 0; i < per_channel; ++i) (*w)[c * per_channel + i] *= s;
    b[c] = (b[c] - parameters[2][c]) * s + parameters[1][c];
  }
  const std::string& y = plan.slot_names[norm.outputs[0]];
  const DType dtype = weights->dtype();
  const Shape w_shape = weights->shape();
  // Adding initializers may move the ones `weights` and `bias` point at.
  const int w_slot = AddInitializer(plan, y + "/folded_weights", TensorOf(dtype, w_shape, *w));
  const int b_slot = AddInitializer(plan, y + "/folded_bias", TensorOf(dtype, {channels}, b));
  conv.inputs.resize(3);
  conv.inputs[1] = w_slot;
  conv.inputs[2] = b_slot;
  conv.outputs[0] = norm.outputs[0];
  conv.op_label += "+BatchNormalization";
  return true;
}

// Whether shape inference gives `a` and `b` the same dtype and shape: every dim the
// same number, or the same symbolic name.
bool SameShape(const GraphView& view, const std::string& a, const std::string& b) {
  const ValueInfo* first = view.FindValue(a);
  const ValueInfo* second = view.FindValue(b);
  if (first == nullptr || second == nullptr || !first->shape || !second->shape) return false;
  if (view.ValueType(a) != view.ValueType(b) || view.ValueType(a) == DType::kUndefined) return false;
  const ValueShape& x = *first->shape;
  const ValueShape& y = *second->shape;
  if (x.dims.size() != y.dims.size()) return false;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    const bool known = x.dims[i] >= 0 && x.dims[i] == y.dims[i];
    const bool same_symbol = x.dims[i] < 0 && y.dims[i] < 0 && i < x.dim_params.size() && i < y.dim_params.size() &&
                             !x.dim_params[i].empty() && x.dim_params[i] == y.dim_params[i];
    if (!known && !same_symbol) return false;
  }
  return true;
}

}  // namespace

void FoldBatchNormIntoConv(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& norm = plan.steps[s];
    if (!IsInferenceBatchNorm(norm) || norm.inputs[0] < 0 || norm.outputs[0] < 0) continue;
    const int source = FoldableProducer(plan, uses, keep, norm.inputs[0]);
    if (source < 0) continue;
    PlanStep& conv = plan.steps[source];
    if (!IsCpuOp(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        conv.activation.kind != FusedActivationKind::kNone) {
      continue;
    }
    folded[s] = FoldInto(plan, conv, norm);
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

namespace {

// Folds CPU Adds into the steps producing one of their operands: for each Add (two
// inputs, one output) and each operand `value` that is output 0 of a step it may disappear
// into (FoldableProducer), with `other` the other operand, asks fold(producer index, uses,
// value, other) to take `other` into that step. The first that does writes the Add's output
// from then on, and the Add goes.
template <typename Fold>
void FoldAddsIntoProducers(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep,
                           Fold&& fold) {
  const SlotUses uses = CountSlotUses(plan, outer_reads);
  std::vector<bool> folded(plan.steps.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& add = plan.steps[s];
    if (!IsCpuOp(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1 || add.outputs[0] < 0) continue;
    for (int side = 0; side < 2 && !folded[s]; ++side) {
      const int value = add.inputs[side], other = add.inputs[1 - side];
      if (value < 0 || other < 0 || value == other) continue;
      const int source = FoldableProducer(plan, uses, keep, value);
      if (source < 0 || !fold(source, uses, value, other)) continue;
      plan.steps[source].outputs[0] = add.outputs[0];
      plan.steps[source].op_label += "+Add";
      folded[s] = true;
    }
  }
  RemoveFoldedSteps(plan, outer_reads, folded);
}

}  // namespace

void FuseConvAdd(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  if (plan.view == nullptr) return;
  FoldAddsIntoProducers(plan, outer_reads, keep, [&](int source, const SlotUses& uses, int value, int other) {
    PlanStep& conv = plan.steps[source];
    if (uses.producer[other] >= source || !IsCpuOp(conv, "Conv") || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2 || conv.activation.kind != FusedActivationKind::kNone || conv.addend_input >= 0 ||
        !SameShape(*plan.view, plan.slot_names[value], plan.slot_names[other])) {
      return false;
    }
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.addend_input = static_cast<int>(conv.inputs.size());
    conv.inputs.push_back(other);
    return true;
  });
}

void FuseMatMulBias(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, const std::vector<bool>& keep) {
  FoldAddsIntoProducers(plan, outer_reads, keep, [&](int source, const SlotUses&, int, int row) {
    PlanStep& matmul = plan.steps[source];
    const Tensor* bias = InitializerOf(plan, row);
    if (bias == nullptr || bias->dtype() != DType::kFloat32 || bias->rank() != 1 || matmul.device != DeviceKind::kCpu ||
        !matmul.kernel || !matmul.kernel->fuses_bias_add || matmul.outputs.size() != 1 || matmul.inputs.size() != 2 ||
        matmul.activation.kind != FusedActivationKind::kNone || matmul.bias_input >= 0 || matmul.widened_output) {
      return false;
    }
    const Tensor* weights = matmul.inputs[1] < 0 ? nullptr : InitializerOf(plan, matmul.inputs[1]);
    if (weights == nullptr || weights->dtype() != DType::kFloat32 || weights->rank() < 2 ||
        weights->shape().back() != bias->shape()[0]) {
      return false;
    }
    matmul.bias_input = static_cast<int>(matmul.inputs.size());
    matmul.inputs.push_back(row);
    return true;
  });
}

namespace {

bool IsTrainingBatchNorm(const PlanStep& step) { return IsCpuBatchNorm(step) && TrainsBatchNorm(step); }

bool IsTrainingBatchNormGrad(const PlanStep& step) {
  return step.device == DeviceKind::kCpu && step.node->op_type() == "BatchNormalizationGrad" &&
         step.node->domain() == kOnnxAmpDomain && step.inputs.size() == 5 && step.inputs[1] >= 0 &&
         IntAttribute(*step.node, "training_mode", 0) != 0;
}

// Puts `slot` at `index` of `slots`, padding with absent (-1) entries.
void PlaceAt(std::vector<int>& slots, int index, int slot) {
  if (static_cast<int>(slots.size()) <= index) slots.resize(static_cast<size_t>(index) + 1, -1);
  slots[static_cast<size_t>(index)] = slot;
}

}  // namespace

void ShareBatchStatistics(GraphPlan& plan) {
  if (plan.channels_last.empty()) return;
  // The training-mode forward step that normalizes each channels-last value.
  std::unordered_map<int, size_t> forward_of;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (!IsTrainingBatchNorm(step) || step.inputs[0] < 0 || !plan.channels_last[step.inputs[0]]) continue;
    forward_of.emplace(step.inputs[0], s);
  }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    PlanStep& grad = plan.steps[s];
    if (!IsTrainingBatchNormGrad(grad)) continue;
    const auto forward = forward_of.find(grad.inputs[1]);
    if (forward == forward_of.end() || forward->second > s) continue;
    PlanStep& norm = plan.steps[forward->second];
    int mean = -1, var = -1;
    if (static_cast<int>(norm.outputs.size()) > kBatchVarIndex) {
      mean = norm.outputs[kBatchMeanIndex];
      var = norm.outputs[kBatchVarIndex];
    } else {
      const std::string& x_name = plan.slot_names[grad.inputs[1]];
      mean = AddSlot(plan, x_name + "/batch_mean", SlotKind::kNodeOutput);
      var = AddSlot(plan, x_name + "/batch_var", SlotKind::kNodeOutput);
      PlaceAt(norm.outputs, kBatchMeanIndex, mean);
      PlaceAt(norm.outputs, kBatchVarIndex, var);
    }
    PlaceAt(grad.inputs, kBatchMeanIndex, mean);
    PlaceAt(grad.inputs, kBatchVarIndex, var);
  }
}

}  // namespace onnx_amp
