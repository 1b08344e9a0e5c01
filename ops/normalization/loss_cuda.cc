// The KernelContext side of the CUDA losses (loss_cuda.cu): shapes, reduction and
// ignore_index as in the CPU kernels (loss.cc, loss_grad.cc).
#include <string>

#include "ops/common/cuda_cast.h"
#include "ops/kernel_registry.h"
#include "ops/normalization/normalization_cuda.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

bool IsFloat(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// Scores [N, C, d...] and labels [N, d...] into a CudaSparseLoss with the node's attributes.
Expected<CudaSparseLoss> SparseLoss(const KernelContext& context, const Tensor& scores, const Tensor& labels) {
  if (!IsFloat(scores.dtype())) return context.UnsupportedDType(scores.dtype());
  if (scores.rank() < 2) return context.Error(ErrorCode::kInvalidModel, "scores must have rank >= 2 [N, C, ...]");
  if (labels.dtype() != DType::kInt64 && labels.dtype() != DType::kInt32) {
    return context.Error(ErrorCode::kInvalidModel, "labels must be int32 or int64");
  }
  Shape expected = {scores.dim(0)};
  for (int64_t i = 2; i < scores.rank(); ++i) expected.push_back(scores.dim(i));
  if (labels.shape() != expected) {
    return context.Error(ErrorCode::kInvalidModel, "labels have shape " + ShapeToString(labels.shape()) +
                                                       ", expected " + ShapeToString(expected));
  }
  CudaSparseLoss loss;
  loss.batch = scores.dim(0);
  loss.classes = scores.dim(1);
  for (int64_t i = 2; i < scores.rank(); ++i) loss.spatial *= scores.dim(i);
  const std::string reduction = context.attr_string("reduction", "mean");
  if (reduction == "none") loss.reduction = 0;
  else if (reduction == "sum") loss.reduction = 1;
  else if (reduction == "mean") loss.reduction = 2;
  else return context.Error(ErrorCode::kInvalidModel, "unknown reduction '" + reduction + "'");
  loss.has_ignore = context.has_attribute("ignore_index");
  loss.ignore_index = context.attr_int("ignore_index", 0);
  loss.label_dtype = labels.dtype();
  return loss;
}

// Optional class weights (input `index`) as float32 on the device; an undefined tensor when absent.
Expected<Tensor> ClassWeights(const KernelContext& context, int index, int64_t classes) {
  const Tensor* weights = context.input(index);
  if (weights == nullptr) return Tensor();
  if (!IsFloat(weights->dtype()) || weights->num_elements() != classes) {
    return context.Error(ErrorCode::kInvalidModel, "weights must be [C] floats");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, CudaOf(context).Allocate(classes * sizeof(float)));
  Tensor wide(DType::kFloat32, {classes}, std::move(buffer));
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaCast(weights->dtype(), DType::kFloat32, weights->raw_data(), wide.raw_data(),
                                          classes, LaunchEnvOf(context)));
  return wide;
}

Expected<Tensor> Scratch(const KernelContext& context, int64_t floats) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, CudaOf(context).Allocate(floats * sizeof(float)));
  return Tensor(DType::kFloat32, {floats}, std::move(buffer));
}

Status SparseLossForward(KernelContext& context, bool softmax) {
  const Tensor* scores = context.input(0);
  const Tensor* labels = context.input(1);
  if (scores == nullptr || labels == nullptr) return context.Error(ErrorCode::kInvalidModel, "needs scores and labels");
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaSparseLoss loss, SparseLoss(context, *scores, *labels));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor weights, ClassWeights(context, 2, loss.classes));
  Shape out_shape;
  if (loss.reduction == 0) out_shape = labels->shape();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, scores->dtype(), out_shape));
  void* log_prob = nullptr;
  if (softmax && context.num_outputs() > 1 && context.output_used(1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * log_prob_out, context.AllocateOutput(1, scores->dtype(), scores->shape()));
    log_prob = log_prob_out->raw_data();
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Scratch(context, 2 * loss.batch * loss.spatial + 1));
  return LaunchCudaSparseLoss(softmax, scores->dtype(), scores->raw_data(), labels->raw_data(),
                              weights.defined() ? weights.data<float>() : nullptr, loss, out->raw_data(), log_prob,
                              scratch.data<float>(), LaunchEnvOf(context));
}

Status SparseLossBackward(KernelContext& context, bool softmax) {
  const Tensor* dloss = context.input(0);
  const Tensor* input = context.input(1);
  const Tensor* labels = context.input(2);
  if (dloss == nullptr || input == nullptr || labels == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "needs dLoss, the scores-shaped input and labels");
  }
  if (!IsFloat(dloss->dtype())) return context.UnsupportedDType(dloss->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaSparseLoss loss, SparseLoss(context, *input, *labels));
  const int64_t samples = loss.batch * loss.spatial;
  if (loss.reduction == 0 ? dloss->num_elements() != samples : dloss->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "dLoss does not match the reduction");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor weights, ClassWeights(context, 3, loss.classes));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, input->dtype(), input->shape()));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Scratch(context, samples + 1));
  return LaunchCudaSparseLossGrad(softmax, input->dtype(), dloss->dtype(), dloss->raw_data(), input->raw_data(),
                                  labels->raw_data(), weights.defined() ? weights.data<float>() : nullptr, loss,
                                  dx->raw_data(), scratch.data<float>(), LaunchEnvOf(context));
}

// Prediction and target alike (dtype and shape).
Status CheckPair(const KernelContext& context, const Tensor* prediction, const Tensor* target) {
  if (prediction == nullptr || target == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "needs prediction and target");
  }
  if (!IsFloat(prediction->dtype())) return context.UnsupportedDType(prediction->dtype());
  if (target->shape() != prediction->shape() || target->dtype() != prediction->dtype()) {
    return context.Error(ErrorCode::kInvalidArgument,
                         "target is " + std::string(DTypeName(target->dtype())) + ShapeToString(target->shape()) +
                             ", expected the prediction's " + std::string(DTypeName(prediction->dtype())) +
                             ShapeToString(prediction->shape()));
  }
  return Status::Ok();
}

Status MeanSquaredError(KernelContext& context) {
  const Tensor* prediction = context.input(0);
  const Tensor* target = context.input(1);
  ONNX_AMP_RETURN_IF_ERROR(CheckPair(context, prediction, target));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, prediction->dtype(), {}));
  return LaunchCudaMeanSquaredError(prediction->dtype(), prediction->raw_data(), target->raw_data(), out->raw_data(),
                                    prediction->num_elements(), LaunchEnvOf(context));
}

Status MeanSquaredErrorGrad(KernelContext& context) {
  const Tensor* dloss = context.input(0);
  const Tensor* prediction = context.input(1);
  const Tensor* target = context.input(2);
  if (dloss == nullptr || dloss->num_elements() != 1 || !IsFloat(dloss->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "dLoss must be a float scalar");
  }
  ONNX_AMP_RETURN_IF_ERROR(CheckPair(context, prediction, target));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dp, context.AllocateOutput(0, prediction->dtype(), prediction->shape()));
  return LaunchCudaMeanSquaredErrorGrad(prediction->dtype(), dloss->dtype(), dloss->raw_data(), prediction->raw_data(),
                                        target->raw_data(), dp->raw_data(), prediction->num_elements(),
                                        LaunchEnvOf(context));
}

}  // namespace

void RegisterLossCudaKernels(KernelRegistry& registry) {
  const auto add = [&](std::string_view domain, std::string_view op, KernelFn compute, int dtype_input) {
    KernelDef def{domain, op, DeviceKind::kCuda, compute};
    def.dtypes = kCudaFloatDTypes;
    def.dtype_input = dtype_input;
    registry.Register(def);
  };
  const KernelFn sce = [](KernelContext& c) { return SparseLossForward(c, true); };
  const KernelFn nll = [](KernelContext& c) { return SparseLossForward(c, false); };
  for (std::string_view domain : {std::string_view(""), std::string_view(kOnnxAmpDomain)}) {
    add(domain, "SoftmaxCrossEntropyLoss", sce, 0);
    add(domain, "NegativeLogLikelihoodLoss", nll, 0);
  }
  add(kOnnxAmpDomain, "MeanSquaredError", MeanSquaredError, 0);
  add(kOnnxAmpDomain, "SoftmaxCrossEntropyLossGrad", [](KernelContext& c) { return SparseLossBackward(c, true); }, 1);
  add(kOnnxAmpDomain, "NegativeLogLikelihoodLossGrad", [](KernelContext& c) { return SparseLossBackward(c, false); }, 1);
  add(kOnnxAmpDomain, "MeanSquaredErrorGrad", MeanSquaredErrorGrad, 1);
}

}  // namespace onnx_amp
