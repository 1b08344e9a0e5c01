// The KernelContext side of the optimizer-step CUDA kernels (update_cuda.cu): the same
// input checks as the CPU kernels (update_ops.cc). The per-step scalars (loss scale,
// learning rate, step) and the skip flag are read on the device, so a step captured in a
// CUDA graph reads each step's values from fixed addresses; micro-batches, which sizes
// the work, is read on the host. With the in_place attribute the update overwrites the
// weight and slot tensors fed in (the trainer's), which then are the outputs.
#include <cmath>
#include <string>
#include <vector>

#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/op_def.h"
#include "ops/training/update_cuda.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_kernel_support.h"
#include "ops/training/gradient_math.h"
#include "ops/training/optimizer_math.h"

namespace onnx_amp {
namespace {

Expected<const Tensor*> Float32Input(const KernelContext& context, int index, const std::string& what) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr || tensor->dtype() != DType::kFloat32) {
    return context.Error(ErrorCode::kInvalidModel, what + " (input " + std::to_string(index) + ") must be a float32 tensor");
  }
  return tensor;
}

template <typename T>
Expected<T> HostScalar(const KernelContext& context, int index, const std::string& what) {
  const Tensor* tensor = context.input(index);
  constexpr DType kDType = DTypeOf<T>::value;
  if (tensor == nullptr || tensor->dtype() != kDType || tensor->num_elements() != 1 ||
      tensor->device() != DeviceKind::kCpu) {
    return context.Error(ErrorCode::kInvalidModel, what + " (input " + std::to_string(index) + ") must be a " +
                                                       std::string(DTypeName(kDType)) + " scalar on the host");
  }
  return *tensor->data<T>();
}

template <typename T>
Expected<const T*> DeviceScalar(const KernelContext& context, int index, const std::string& what) {
  const Tensor* tensor = context.input(index);
  constexpr DType kDType = DTypeOf<T>::value;
  if (tensor == nullptr || tensor->dtype() != kDType || tensor->num_elements() != 1 ||
      tensor->device() == DeviceKind::kCpu) {
    return context.Error(ErrorCode::kInvalidModel, what + " (input " + std::to_string(index) + ") must be a " +
                                                       std::string(DTypeName(kDType)) + " scalar on the device");
  }
  return tensor->data<T>();
}

// The flags and sums of a multi-tensor launch.
Expected<std::shared_ptr<Buffer>> MultiTensorScratch(const KernelContext& context) {
  return CudaOf(context).Allocate(CudaMultiTensorScratchBytes());
}

Expected<std::vector<const Tensor*>> Gradients(const KernelContext& context, int first) {
  std::vector<const Tensor*> gradients;
  for (int k = first; k < context.num_inputs(); ++k) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* g, Float32Input(context, k, "gradient " + std::to_string(k - first)));
    gradients.push_back(g);
  }
  if (gradients.empty()) return context.Error(ErrorCode::kInvalidModel, "needs at least one gradient");
  return gradients;
}

Status UnscaleAndCheck(KernelContext& context) {
  // The scale is the trainer's (LossScalerConfig::Validate keeps it positive and finite).
  ONNX_AMP_ASSIGN_OR_RETURN(const float* scale, DeviceScalar<float>(context, 0, "scale"));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<const Tensor*> gradients, Gradients(context, 1));
  const int count = static_cast<int>(gradients.size());
  if (context.num_outputs() != count + 2) {
    return context.Error(ErrorCode::kInvalidModel, "has " + std::to_string(count) + " gradients, so needs " +
                                                       std::to_string(count + 2) + " outputs");
  }
  // The scale is read on the device, so only the graph can say it is always 1.
  const bool scaled = context.attr_int("scaled", 1) != 0;
  // In place, the gradients' buffers are written (the in_place contract, update_ops.cc).
  const bool in_place = context.attr_int("in_place", 0) != 0;
  std::vector<CudaTensorChunkSource> sources;
  for (int k = 0; k < count; ++k) {
    CudaTensorChunkSource source{gradients[k]->data<float>(), nullptr, gradients[k]->num_elements()};
    if (!scaled || in_place) {
      // Not scaled: nothing to multiply, check only; in place: unscaled where they are.
      context.SetOutput(k + 2, *gradients[k]);
      if (scaled) source.out = const_cast<float*>(gradients[k]->data<float>());
    } else {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(k + 2, DType::kFloat32, gradients[k]->shape()));
      source.out = out->data<float>();
    }
    sources.push_back(source);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * found, context.AllocateOutput(0, DType::kBool, {}));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * first, context.AllocateOutput(1, DType::kInt64, {}));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::shared_ptr<Buffer> scratch, MultiTensorScratch(context));
  return LaunchCudaUnscaleAndCheck(sources, scale, found->data<bool>(), first->data<int64_t>(), scratch->data(),
                                   LaunchEnvOf(context));
}

Status GlobalNormClip(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t micro_batches, HostScalar<int64_t>(context, 0, "micro_batches"));
  if (micro_batches < 1) return context.Error(ErrorCode::kInvalidArgument, "micro_batches must be >= 1");
  const float max_norm = context.attr_float("max_norm", 0.0f);
  if (!(max_norm >= 0.0f) || !std::isfinite(max_norm)) {
    return context.Error(ErrorCode::kInvalidModel, "max_norm must be finite and >= 0");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<const Tensor*> gradients, Gradients(context, 1));
  if (context.num_outputs() != static_cast<int>(gradients.size())) {
    return context.Error(ErrorCode::kInvalidModel, "needs one output per gradient");
  }
  if (max_norm == 0.0f && micro_batches == 1) {
    for (size_t k = 0; k < gradients.size(); ++k) context.SetOutput(static_cast<int>(k), *gradients[k]);
    return Status::Ok();
  }
  std::vector<CudaTensorChunkSource> sources;
  for (size_t k = 0; k < gradients.size(); ++k) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out,
                              context.AllocateOutput(static_cast<int>(k), DType::kFloat32, gradients[k]->shape()));
    sources.push_back({gradients[k]->data<float>(), out->data<float>(), gradients[k]->num_elements()});
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::shared_ptr<Buffer> scratch, MultiTensorScratch(context));
  return LaunchCudaGlobalNormClip(sources, micro_batches, max_norm, scratch->data(), LaunchEnvOf(context));
}

// Weight (input 0), gradient (1), `num_slots` slots from input 2 (absent ones nullptr
// where `slot_optional`), outputs allocated; then the launch.
Status Update(KernelContext& context, CudaUpdateParams params, int num_slots, bool slot_optional, int skip_index) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* weight, Float32Input(context, 0, "weight"));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* gradient, Float32Input(context, 1, "gradient"));
  if (gradient->shape() != weight->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "gradient " + ShapeToString(gradient->shape()) + " and weight " +
                                                       ShapeToString(weight->shape()) + " differ in shape");
  }
  const Tensor* skip = context.input(skip_index);
  if (skip == nullptr || skip->dtype() != DType::kBool || skip->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "skip (input " + std::to_string(skip_index) + ") must be a bool scalar");
  }
  // The trainer folds the weight Casts into the update on the CPU only; on a device the
  // training graph keeps them (runtime/train/weight_copies.h).
  if (context.input(skip_index + 1) != nullptr) {
    return context.Error(ErrorCode::kUnsupported, "the weight's low-precision copy is written on the CPU only");
  }
  const bool in_place = context.attr_int("in_place", 0) != 0;
  const float* slots[2] = {nullptr, nullptr};
  float* new_slots[2] = {nullptr, nullptr};
  for (int k = 0; k < num_slots; ++k) {
    if (slot_optional && context.input(2 + k) == nullptr) continue;
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* slot, Float32Input(context, 2 + k, "slot " + std::to_string(k)));
    if (slot->shape() != weight->shape()) {
      return context.Error(ErrorCode::kInvalidModel, "slot " + std::to_string(k) + " and weight differ in shape");
    }
    if (context.num_outputs() <= 1 + k) {
      return context.Error(ErrorCode::kInvalidModel, "slot " + std::to_string(k) + " is given but its new value is no output");
    }
    slots[k] = slot->data<float>();
    if (in_place) {
      context.SetOutput(1 + k, *slot);
      new_slots[k] = const_cast<float*>(slots[k]);  // the op's contract with the caller that sets in_place
      continue;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(1 + k, DType::kFloat32, weight->shape()));
    new_slots[k] = out->data<float>();
  }
  if (params.kind == CudaOptimizer::kSgd && params.momentum != 0.0f && slots[0] == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "momentum needs the velocity input");
  }
  float* new_weight = const_cast<float*>(weight->data<float>());
  if (in_place) {
    context.SetOutput(0, *weight);
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kFloat32, weight->shape()));
    new_weight = out->data<float>();
  }
  return LaunchCudaOptimizerUpdate(params, weight->data<float>(), gradient->data<float>(), slots[0], slots[1],
                                   new_weight, new_slots[0], new_slots[1], weight->num_elements(),
                                   skip->data<bool>(), LaunchEnvOf(context));
}

Status SgdUpdateCuda(KernelContext& context) {
  CudaUpdateParams params;
  params.kind = CudaOptimizer::kSgd;
  ONNX_AMP_ASSIGN_OR_RETURN(params.learning_rate, DeviceScalar<float>(context, 3, "learning_rate"));
  params.momentum = context.attr_float("momentum", 0.0f);
  params.nesterov = context.attr_int("nesterov", 0) != 0;
  return Update(context, params, 1, true, 4);
}

Status AdamFamily(KernelContext& context, bool decoupled_decay) {
  CudaUpdateParams params;
  params.kind = CudaOptimizer::kAdam;
  ONNX_AMP_ASSIGN_OR_RETURN(params.learning_rate, DeviceScalar<float>(context, 4, "learning_rate"));
  ONNX_AMP_ASSIGN_OR_RETURN(params.step, DeviceScalar<int64_t>(context, 5, "step"));
  params.beta1 = context.attr_float("beta1", 0.9f);
  params.beta2 = context.attr_float("beta2", 0.999f);
  params.epsilon = context.attr_float("epsilon", 1e-7f);
  params.weight_decay = decoupled_decay ? context.attr_float("weight_decay", 0.004f) : 0.0f;
  return Update(context, params, 2, false, 6);
}

Status RmspropUpdateCuda(KernelContext& context) {
  CudaUpdateParams params;
  params.kind = CudaOptimizer::kRmsprop;
  ONNX_AMP_ASSIGN_OR_RETURN(params.learning_rate, DeviceScalar<float>(context, 3, "learning_rate"));
  params.rho = context.attr_float("rho", 0.9f);
  params.epsilon = context.attr_float("epsilon", 1e-7f);
  return Update(context, params, 1, false, 4);
}

}  // namespace

void RegisterTrainingCudaKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
    uint32_t host_inputs;
  };
  const Entry entries[] = {
      {"UnscaleAndCheck", UnscaleAndCheck, 0},
      {"GlobalNormClip", GlobalNormClip, InputBit(0)},
      {"SgdUpdate", SgdUpdateCuda, 0},
      {"AdamUpdate", [](KernelContext& c) { return AdamFamily(c, false); }, 0},
      {"AdamWUpdate", [](KernelContext& c) { return AdamFamily(c, true); }, 0},
      {"RmspropUpdate", RmspropUpdateCuda, 0},
  };
  for (const Entry& entry : entries) {
    KernelDef def{kOnnxAmpDomain, entry.op_type, DeviceKind::kCuda, entry.compute};
    def.host_inputs = entry.host_inputs;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
