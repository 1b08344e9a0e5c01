// Test helper for npz_numpy_test.py: reads a .npz, .npy or .pb tensor file and writes
// its arrays to OUT (.npz, or .npy for a single array), through the runtime's readers
// and writers. Exits 1 with the error message on stderr.
#include <cstdio>
#include <string>

#include "runtime/io/npy.h"
#include "runtime/io/npz.h"
#include "runtime/io/tensor_proto.h"

namespace {

onnx_amp::Expected<std::vector<onnx_amp::NamedTensor>> ReadAny(const std::string& path) {
  if (path.ends_with(".npz")) return onnx_amp::ReadNpzFile(path);
  if (path.ends_with(".pb")) {
    ONNX_AMP_ASSIGN_OR_RETURN(onnx_amp::NamedTensor tensor, onnx_amp::ReadTensorProtoFile(path));
    return std::vector<onnx_amp::NamedTensor>{std::move(tensor)};
  }
  ONNX_AMP_ASSIGN_OR_RETURN(onnx_amp::Tensor tensor, onnx_amp::ReadNpyFile(path));
  return std::vector<onnx_amp::NamedTensor>{{"array", std::move(tensor)}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: npz_copy_tool IN OUT\n");
    return 2;
  }
  const std::string out = argv[2];
  auto arrays = ReadAny(argv[1]);
  onnx_amp::Status status = arrays.status();
  if (arrays.ok()) {
    status = out.ends_with(".npy") ? onnx_amp::WriteNpyFile(out, arrays->at(0).tensor)
                                   : onnx_amp::WriteNpzFile(out, *arrays);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
