#include "tests/runtime/test_kernels.h"

#include "ops/cpu_kernels.h"

namespace onnx_amp::testing {

std::atomic<int> test_kernel_calls{0};

namespace {

Status AddOne(KernelContext& context) {
  ++test_kernel_calls;
  const Tensor* x = context.input(0);
  if (x->dtype() != DType::kFloat32) return context.UnsupportedDType(x->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, DType::kFloat32, x->shape()));
  const float* in = x->data<float>();
  float* out = y->data<float>();
  for (int64_t i = 0; i < x->num_elements(); ++i) out[i] = in[i] + 1.0f;
  return Status::Ok();
}

Status AddTest(KernelContext& context) {
  ++test_kernel_calls;
  const Tensor* a = context.input(0);
  const Tensor* b = context.input(1);
  if (a->shape() != b->shape()) return context.Error(ErrorCode::kInvalidModel, "shapes differ");
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * c, context.AllocateOutput(0, DType::kFloat32, a->shape()));
  for (int64_t i = 0; i < a->num_elements(); ++i) c->data<float>()[i] = a->data<float>()[i] + b->data<float>()[i];
  return Status::Ok();
}

Status Fail(KernelContext& context) {
  ++test_kernel_calls;
  return context.Error(ErrorCode::kNumeric, "asked to fail");
}

}  // namespace

KernelRegistry MakeTestRegistry() {
  KernelRegistry registry;
  registry.Register({"test", "AddOne", DeviceKind::kCpu, &AddOne, /*may_inplace=*/true});
  registry.Register({"test", "AddOneCopy", DeviceKind::kCpu, &AddOne, /*may_inplace=*/false});
  registry.Register({"test", "AddTest", DeviceKind::kCpu, &AddTest, /*may_inplace=*/true});
  registry.Register({"test", "Fail", DeviceKind::kCpu, &Fail});
  RegisterControlFlowCpuKernels(registry);
  return registry;
}

}  // namespace onnx_amp::testing
