// Fuzzes the .npy reader; an array that parses must survive a write and a second read
// unchanged (same dtype, shape and bytes).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "runtime/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  onnx_amp::Expected<onnx_amp::Tensor> tensor = onnx_amp::ParseNpy(bytes, "input.npy");
  if (!tensor.ok()) return 0;
  onnx_amp::Expected<std::string> written = onnx_amp::SerializeNpy(*tensor, "input.npy");
  if (!written.ok()) __builtin_trap();
  onnx_amp::Expected<onnx_amp::Tensor> again = onnx_amp::ParseNpy(*written, "written.npy");
  if (!again.ok() || again->dtype() != tensor->dtype() || again->shape() != tensor->shape() ||
      (tensor->bytes() > 0 && std::memcmp(again->raw_data(), tensor->raw_data(), tensor->bytes()) != 0)) {
    __builtin_trap();
  }
  return 0;
}
