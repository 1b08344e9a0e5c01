#include "runtime/onnx/opset_support.h"

#include <string>

#include <onnx/defs/schema.h>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

Status CheckOpset(const onnx::OperatorSetIdProto& opset) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto range = ranges.find(std::string(CanonicalDomain(opset.domain())));
  if (range == ranges.end()) return Status::Ok();
  const auto [first, last] = range->second;
  const std::string name = "opset " + std::string(DisplayDomain(opset.domain())) + " " + std::to_string(opset.version());
  if (opset.version() > last) {
    return Unsupported(name + " is newer than this build supports (up to " + std::to_string(last) +
                       "); upgrade onnx-amp");
  }
  if (opset.version() < first) {
    return InvalidModel(name + " is not a valid version (the first is " + std::to_string(first) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status CheckOpsetsSupported(const onnx::ModelProto& model) {
  if (model.ir_version() > onnx::IR_VERSION) {
    return Unsupported("IR version " + std::to_string(model.ir_version()) +
                       " is newer than this build supports (up to " + std::to_string(onnx::IR_VERSION) +
                       "); upgrade onnx-amp");
  }
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    ONNX_AMP_RETURN_IF_ERROR(CheckOpset(opset));
  }
  for (const onnx::FunctionProto& function : model.functions()) {
    for (const onnx::OperatorSetIdProto& opset : function.opset_import()) {
      ONNX_AMP_RETURN_IF_ERROR(CheckOpset(opset).WithContext("function '" + function.name() + "'"));
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
