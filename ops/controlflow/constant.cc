// Constant: the tensor in one of its value attributes (value, value_float(s),
// value_int(s)), decoded by ConstantNodeValue. String and sparse constants are not
// supported.
#include "ops/controlflow/controlflow_kernels.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {

Status ConstantCpu(KernelContext& context) {
  Expected<Tensor> tensor = ConstantNodeValue(context.node());
  if (!tensor.ok()) return context.Error(tensor.status().code(), tensor.status().message());
  context.SetOutput(0, std::move(tensor).value());
  return Status::Ok();
}

}  // namespace onnx_amp
