// Fuzzes the graph view and type inference (ONNX shape inference with data propagation,
// then our own type rules) on models that pass the loader's opset check, as every
// command builds the view right after loading.
#include <cstddef>
#include <cstdint>

#include <onnx/onnx_pb.h>

#include "runtime/graph/graph_view.h"
#include "runtime/onnx/opset_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  if (!onnx_amp::CheckOpsetsSupported(model).ok()) return 0;
  onnx_amp::BuildModelView(model).status().IgnoreError();
  return 0;
}
