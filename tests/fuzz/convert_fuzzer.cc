// Fuzzes `convert`: each model that parses and passes the opset check is converted
// under every policy (the converter runs the checker and strict inference itself).
#include <cstddef>
#include <cstdint>

#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "runtime/onnx/opset_support.h"

namespace {

constexpr onnx_amp::PolicyKind kPolicies[] = {
    onnx_amp::PolicyKind::kFloat32, onnx_amp::PolicyKind::kFloat16, onnx_amp::PolicyKind::kBFloat16,
    onnx_amp::PolicyKind::kMixedFloat16, onnx_amp::PolicyKind::kMixedBFloat16};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  if (!onnx_amp::CheckOpsetsSupported(model).ok()) return 0;
  for (const onnx_amp::PolicyKind policy : kPolicies) {
    onnx_amp::ConvertOptions options;
    options.policy.kind = policy;
    if (!options.policy.Compile().ok()) __builtin_trap();  // a built-in policy always compiles
    onnx_amp::ConvertModel(model, options).status().IgnoreError();
  }
  return 0;
}
