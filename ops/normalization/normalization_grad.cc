// Gradient rules of softmax-like ops, losses and normalisations, through fused ops of
// domain ai.onnx_amp (ops/training, and loss_grad.cc for the losses).
#include "ops/gradient_context.h"
#include "ops/gradients.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// Before opset 13 Softmax/LogSoftmax normalise the flattened block of dims [axis, rank)
// (default axis 1); from 13 the single axis (default -1).
Attributes SoftmaxAttributes(GradientContext& c) {
  const bool coerced = c.opset() < 13;
  return {MakeAttribute("axis", c.AttrInt("axis", coerced ? 1 : -1)),
          MakeAttribute("coerced", static_cast<int64_t>(coerced))};
}

// dX = Y * (dY - sum(dY * Y))   (fused: SoftmaxGrad)
Status SoftmaxGrad(GradientContext& c) {
  c.Emit("SoftmaxGrad", {c.GO(0), c.O(0)}, {c.GI(0)}, SoftmaxAttributes(c), kOnnxAmpDomain);
  return Status::Ok();
}

// dX = dY - exp(Y) * sum(dY)   (fused: LogSoftmaxGrad)
Status LogSoftmaxGrad(GradientContext& c) {
  c.Emit("LogSoftmaxGrad", {c.GO(0), c.O(0)}, {c.GI(0)}, SoftmaxAttributes(c), kOnnxAmpDomain);
  return Status::Ok();
}

// The sparse losses' input gradient through their fused op, which reads `forward` (a
// value of the scores' shape), the labels and the class weights. Class weights are
// constants of the loss: they get no gradient; neither do the labels.
Status SparseLossGrad(GradientContext& c, const std::string& grad_op, const std::string& forward) {
  if (!c.HasGO(0)) return c.Error(ErrorCode::kUnsupported, "only the loss output can carry a gradient");
  std::vector<std::string> inputs = {c.GO(0), forward, c.I(1)};
  if (c.HasInput(2)) inputs.push_back(c.I(2));
  c.Emit(grad_op, inputs, {c.GI(0)}, c.CopyAttributes({"reduction", "ignore_index"}), kOnnxAmpDomain);
  return Status::Ok();
}

// dScores = dLoss * w_n * (softmax(scores) - onehot(label)) / (the reduction's divisor),
// zero where label == ignore_index (fused: SoftmaxCrossEntropyLossGrad). It reads the
// log_prob output, which the forward node is made to emit.
Status SoftmaxCrossEntropyLossGrad(GradientContext& c) {
  if (!c.NeedsGI(0)) return Status::Ok();
  return SparseLossGrad(c, "SoftmaxCrossEntropyLossGrad", c.EnsureOutput(1));
}

// dInput = -dLoss * w_n * onehot(label) / (the reduction's divisor), zero where
// label == ignore_index (fused: NegativeLogLikelihoodLossGrad).
Status NegativeLogLikelihoodLossGrad(GradientContext& c) {
  if (!c.NeedsGI(0)) return Status::Ok();
  return SparseLossGrad(c, "NegativeLogLikelihoodLossGrad", c.I(0));
}

// dPrediction = dLoss * 2 * (prediction - target) / size (fused: MeanSquaredErrorGrad);
// dTarget = -dPrediction.
Status MeanSquaredErrorGrad(GradientContext& c) {
  if (!c.HasGO(0)) return Status::Ok();
  const std::string d_prediction = c.NeedsGI(0) ? c.GI(0) : c.NewValue("d_prediction");
  c.Emit("MeanSquaredErrorGrad", {c.GO(0), c.I(0), c.I(1)}, {d_prediction}, {}, kOnnxAmpDomain);
  if (c.NeedsGI(1)) c.Emit("Neg", {d_prediction}, {c.GI(1)});
  return Status::Ok();
}

// Training mode (batch statistics, opset >= 14 training_mode=1, or the extra outputs of
// opsets 9-13): dX = scale * inv_std * (dY - mean(dY) - xhat * mean(dY * xhat)).
// Inference form (given mean/var): dX = scale * inv_std * dY.
// Both: dScale = sum(dY * xhat), dBias = sum(dY) over all axes but the channel.
// The running statistics are buffers, not trained: they get no gradient.
// (fused: BatchNormalizationGrad)
Status BatchNormalizationGrad(GradientContext& c) {
  if (!c.HasGO(0)) return Status::Ok();
  if (c.opset() < 9 && c.AttrInt("spatial", 1) == 0) {
    return c.Error(ErrorCode::kUnsupported, "spatial=0 (statistics per element, before opset 9) has no gradient rule");
  }
  const bool training = c.opset() >= 14 ? c.AttrInt("training_mode", 0) != 0 : c.num_outputs() > 1;
  std::vector<std::string> outputs(3);
  for (int i = 0; i < 3; ++i) {
    if (c.NeedsGI(i)) outputs[i] = c.GI(i);
  }
  while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  if (outputs.empty()) return Status::Ok();
  c.Emit("BatchNormalizationGrad", {c.GO(0), c.I(0), c.I(1), c.I(3), c.I(4)}, outputs,
         {MakeAttribute("epsilon", c.AttrFloat("epsilon", 1e-5f)),
          MakeAttribute("training_mode", static_cast<int64_t>(training))},
         kOnnxAmpDomain);
  return Status::Ok();
}

// dX, dScale, dBias from the saved Mean and InvStdDev outputs, which the forward node is
// made to emit (fused: LayerNormalizationGrad).
Status LayerNormalizationGrad(GradientContext& c) {
  if (!c.HasGO(0)) return Status::Ok();
  const std::string mean = c.EnsureOutput(1);
  const std::string inv_std = c.EnsureOutput(2);
  std::vector<std::string> outputs(3);
  for (int i = 0; i < 3; ++i) {
    if (c.NeedsGI(i)) outputs[i] = c.GI(i);
  }
  while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  c.Emit("LayerNormalizationGrad", {c.GO(0), c.I(0), c.I(1), mean, inv_std}, outputs,
         {MakeAttribute("axis", c.AttrInt("axis", -1))}, kOnnxAmpDomain);
  return Status::Ok();
}

}  // namespace

void RegisterNormalizationGradients(GradientRegistry& registry) {
  registry.Register("", "Softmax", SoftmaxGrad);
  registry.Register("", "LogSoftmax", LogSoftmaxGrad);
  registry.Register("", "SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLossGrad);
  registry.Register("", "NegativeLogLikelihoodLoss", NegativeLogLikelihoodLossGrad);
  // The same losses of domain ai.onnx_amp (any opset), and MeanSquaredError.
  registry.Register(kOnnxAmpDomain, "SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLossGrad);
  registry.Register(kOnnxAmpDomain, "NegativeLogLikelihoodLoss", NegativeLogLikelihoodLossGrad);
  registry.Register(kOnnxAmpDomain, "MeanSquaredError", MeanSquaredErrorGrad);
  registry.Register("", "BatchNormalization", BatchNormalizationGrad);
  registry.Register("", "LayerNormalization", LayerNormalizationGrad);
}

}  // namespace onnx_amp
