// Registers the CPU kernels of the fused gradient and optimizer-step ops, and the
// input/output helpers the gradient kernels share.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/linalg/float_compute.h"
#include "ops/training/training_kernels.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

Expected<const Tensor*> FloatInput(const KernelContext& context, int index) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " is missing");
  }
  switch (tensor->dtype()) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
      return tensor;
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
      return context.UnsupportedDType(tensor->dtype());
  }
  return context.UnsupportedDType(tensor->dtype());
}

Status WriteOutput(KernelContext& context, int index, DType dtype, const Shape& shape,
                   const std::vector<float>& values) {
  if (index >= context.num_outputs() || !context.output_used(index)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, dtype, shape));
  ONNX_AMP_ASSERT(static_cast<int64_t>(values.size()) == out->num_elements(), "gradient size mismatch");
  StoreFromFloat32(values.data(), *out);
  return Status::Ok();
}

void RegisterTrainingCpuKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
  };
  static constexpr Entry kEntries[] = {
      {"ReluGrad", ReluGradKernel},
      {"SigmoidGrad", SigmoidGradKernel},
      {"TanhGrad", TanhGradKernel},
      {"GeluGrad", GeluGradKernel},
      {"SoftmaxGrad", SoftmaxGradKernel},
      {"LogSoftmaxGrad", LogSoftmaxGradKernel},
      {"LayerNormalizationGrad", LayerNormalizationGradKernel},
      {"BatchNormalizationGrad", BatchNormalizationGradKernel},
      {"ConvGrad", ConvGradKernel},
      {"MaxPoolGrad", MaxPoolGradKernel},
      {"AveragePoolGrad", AveragePoolGradKernel},
      {"GatherGrad", GatherGradKernel},
      {"UnscaleAndCheck", UnscaleAndCheckKernel},
      {"GlobalNormClip", GlobalNormClipKernel},
      {"SgdUpdate", SgdUpdateKernel},
      {"AdamUpdate", AdamUpdateKernel},
      {"AdamWUpdate", AdamWUpdateKernel},
      {"RmspropUpdate", RmspropUpdateKernel},
  };
  for (const Entry& entry : kEntries) {
    registry.Register(KernelDef{kOnnxAmpDomain, entry.op_type, DeviceKind::kCpu, entry.compute});
  }
}

}  // namespace onnx_amp
