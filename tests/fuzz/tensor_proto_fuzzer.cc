// Fuzzes the TensorProto (.pb) reader: protobuf parsing, then decoding raw_data or the
// typed fields; a tensor that decodes must encode and decode again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <onnx/onnx_pb.h>

#include "runtime/io/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  onnx_amp::Expected<onnx_amp::Tensor> tensor = onnx_amp::TensorFromProto(proto);
  if (!tensor.ok()) return 0;
  onnx_amp::Expected<onnx::TensorProto> encoded = onnx_amp::TensorToProto(*tensor, proto.name());
  if (!encoded.ok()) __builtin_trap();
  onnx_amp::Expected<onnx_amp::Tensor> again = onnx_amp::TensorFromProto(*encoded);
  if (!again.ok() || again->dtype() != tensor->dtype() || again->shape() != tensor->shape() ||
      (tensor->bytes() > 0 && std::memcmp(again->raw_data(), tensor->raw_data(), tensor->bytes()) != 0)) {
    __builtin_trap();
  }
  return 0;
}
