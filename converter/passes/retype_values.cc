#include "converter/passes/retype_values.h"

#include <onnx/onnx_pb.h>

namespace onnx_amp {
namespace {

void Retype(onnx::ValueInfoProto& info, const ConversionPlan& plan) {
  if (!info.type().has_tensor_type()) return;
  const DType dtype = plan.values.TypeOf(info.name());
  if (!IsFloatingPoint(dtype)) return;
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  auto declared = DTypeFromOnnx(tensor_type->elem_type());
  if (!declared || !IsFloatingPoint(*declared)) return;
  tensor_type->set_elem_type(ToOnnx(dtype));
}

}  // namespace

Status RetypeValues(PassContext& context) {
  const ConversionPlan& plan = context.plan;
  for (const GraphScope& scope : plan.graphs) {
    for (auto& info : *scope.graph->mutable_input()) Retype(info, plan);
    for (auto& info : *scope.graph->mutable_output()) Retype(info, plan);
    for (auto& info : *scope.graph->mutable_value_info()) Retype(info, plan);
  }
  return Status::Ok();
}

}  // namespace onnx_amp
