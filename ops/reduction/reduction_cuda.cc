// The KernelContext side of the Reduce* CUDA kernels: axes (read on the host) and the
// reduce plan as on the CPU (reduce_plan.h), float32 scratch from the device pool.
#include <algorithm>
#include <vector>

#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/op_def.h"
#include "ops/reduction/reduce_plan.h"
#include "ops/reduction/reduction_cuda.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

// A device copy of `values`.
Expected<std::shared_ptr<Buffer>> UploadOffsets(CudaDevice& device, const std::vector<int64_t>& values) {
  const size_t bytes = values.size() * sizeof(int64_t);
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device.Allocate(bytes));
  ONNX_AMP_RETURN_IF_ERROR(device.CopyFromHost(buffer->data(), values.data(), bytes));
  return buffer;
}

template <CudaReduce kKind>
Status Reduce(KernelContext& context, int axes_input_since) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input 0 is missing");
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<bool> mask, ReduceAxesMask(context, x->rank(), axes_input_since));
  const bool keepdims = context.attr_int("keepdims", 1) != 0;
  CudaDevice& device = CudaOf(context);
  const CudaLaunchEnv env = LaunchEnvOf(context);
  if (x->rank() > 0 && std::find(mask.begin(), mask.end(), true) == mask.end()) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
    return device.CopyOnDevice(y->raw_data(), x->raw_data(), x->bytes());
  }
  const ReducePlan plan = MakeReducePlan(x->shape(), mask, keepdims);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), plan.output_shape));
  if (!plan.blocked) {
    ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> outputs, UploadOffsets(device, plan.output_offsets));
    ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> steps, UploadOffsets(device, plan.step_offsets));
    return LaunchCudaReduceGather(kKind, x->dtype(), x->raw_data(), y->raw_data(), plan.outputs, plan.reduced,
                                  static_cast<const int64_t*>(outputs->data()),
                                  static_cast<const int64_t*>(steps->data()), env);
  }
  const CudaReduceShape shape{plan.outer, plan.reduced, plan.inner};
  const int64_t scratch_floats = CudaReduceScratchFloats(shape, env.multiprocessors);
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> scratch, device.Allocate(scratch_floats * sizeof(float)));
  return LaunchCudaReduce(kKind, x->dtype(), x->raw_data(), y->raw_data(), shape, static_cast<float*>(scratch->data()),
                          env);
}

}  // namespace

void RegisterReductionCudaKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
  };
  // ReduceSum takes axes as an input from opset 13, the other Reduce ops from opset 18.
  const Entry entries[] = {
      {"ReduceSum", [](KernelContext& c) { return Reduce<CudaReduce::kSum>(c, 13); }},
      {"ReduceMean", [](KernelContext& c) { return Reduce<CudaReduce::kMean>(c, 18); }},
      {"ReduceMax", [](KernelContext& c) { return Reduce<CudaReduce::kMax>(c, 18); }},
      {"ReduceMin", [](KernelContext& c) { return Reduce<CudaReduce::kMin>(c, 18); }},
      {"ReduceProd", [](KernelContext& c) { return Reduce<CudaReduce::kProd>(c, 18); }},
      {"ReduceL1", [](KernelContext& c) { return Reduce<CudaReduce::kL1>(c, 18); }},
      {"ReduceL2", [](KernelContext& c) { return Reduce<CudaReduce::kL2>(c, 18); }},
      {"ReduceSumSquare", [](KernelContext& c) { return Reduce<CudaReduce::kSumSquare>(c, 18); }},
      {"ReduceLogSum", [](KernelContext& c) { return Reduce<CudaReduce::kLogSum>(c, 18); }},
      {"ReduceLogSumExp", [](KernelContext& c) { return Reduce<CudaReduce::kLogSumExp>(c, 18); }},
  };
  for (const Entry& entry : entries) {
    KernelDef def{"", entry.op_type, DeviceKind::kCuda, entry.compute};
    def.host_inputs = InputBit(1);  // axes
    def.dtypes = kCudaFloatDTypes;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
