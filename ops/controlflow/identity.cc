// Identity: the output is a view of the input (no copy).
#include "ops/controlflow/controlflow_kernels.h"

namespace onnx_amp {

Status IdentityCpu(KernelContext& context) {
  const Tensor* input = context.input(0);
  if (input == nullptr) return context.Error(ErrorCode::kInvalidModel, "the input is absent");
  context.SetOutput(0, *input);
  return Status::Ok();
}

}  // namespace onnx_amp
