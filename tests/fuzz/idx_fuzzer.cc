// Fuzzes the IDX dataset reader (plain or gzip): the input is split into an images file
// and a labels file (a 2-byte length of the first, then the two), loaded as a pair.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/train/idx_dataset.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/scratch_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const onnx_amp::fuzz::ScratchFolder folder("onnx-amp-fuzz-idx");
  onnx_amp::fuzz::FuzzInput input(data, size);
  const std::string_view images = input.Bytes(0xFFFF);
  const std::string_view labels = input.Rest();
  const auto images_path =
      folder.Write("images-idx3-ubyte", reinterpret_cast<const uint8_t*>(images.data()), images.size());
  const auto labels_path =
      folder.Write("labels-idx1-ubyte", reinterpret_cast<const uint8_t*>(labels.data()), labels.size());
  onnx_amp::LoadIdxPair(images_path, labels_path).status().IgnoreError();
  return 0;
}
