// Fuzzes the .npz reader (zip directory, zip64 records, deflate, CRC, the .npy inside).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/io/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  onnx_amp::ParseNpz(bytes, "input.npz").status().IgnoreError();
  return 0;
}
