#include "runtime/exec/device.h"

namespace onnx_amp {

Expected<Tensor> CopyToDevice(const Tensor& host, Device& device) {
  if (host.device() == device.kind()) return host;
  ONNX_AMP_ASSERT(host.device() == DeviceKind::kCpu, "a copy between two devices");
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device.Allocate(host.bytes()));
  Tensor copy(host.dtype(), host.shape(), std::move(buffer));
  if (host.bytes() > 0) ONNX_AMP_RETURN_IF_ERROR(device.CopyFromHost(copy.raw_data(), host.raw_data(), host.bytes()));
  return copy;
}

Expected<Tensor> CopyToHost(const Tensor& tensor, Device* device) {
  if (tensor.device() == DeviceKind::kCpu) return tensor;
  if (device == nullptr || device->kind() != tensor.device()) {
    return InternalError("a device tensor read on the host without its device");
  }
  Tensor copy = Tensor::Empty(tensor.dtype(), tensor.shape());
  if (tensor.bytes() > 0) ONNX_AMP_RETURN_IF_ERROR(device->CopyToHost(copy.raw_data(), tensor.raw_data(), tensor.bytes()));
  return copy;
}

}  // namespace onnx_amp
