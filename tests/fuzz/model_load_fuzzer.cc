// Fuzzes the model loader: the input is a model file in a folder that also holds an
// external data file (weights.bin) and a subfolder, so mutated external_data entries
// (locations, offsets, lengths) reach the path and range checks. Every tensor of a
// model that loads is then decoded as the runtime would (TensorFromProto).
#include <cstddef>
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"
#include "runtime/onnx/tensor_walk.h"
#include "tests/fuzz/scratch_folder.h"

namespace {

const onnx_amp::fuzz::ScratchFolder& Folder() {
  static const onnx_amp::fuzz::ScratchFolder folder("onnx-amp-fuzz-model");
  static const bool prepared = [] {
    std::string weights(4096, '\0');
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 7);
    folder.Write("weights.bin", reinterpret_cast<const uint8_t*>(weights.data()), weights.size());
    std::filesystem::create_directories(folder.path() / "sub");
    return true;
  }();
  (void)prepared;
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path model_path = Folder().Write("model.onnx", data, size);
  onnx_amp::Expected<onnx::ModelProto> model = onnx_amp::LoadModel(model_path);
  if (!model.ok()) return 0;
  onnx_amp::ForEachTensor(*model, [](const onnx::TensorProto& tensor, std::string_view) {
    onnx_amp::TensorFromProto(tensor).status().IgnoreError();
    return onnx_amp::Status::Ok();
  }).IgnoreError();
  return 0;
}
