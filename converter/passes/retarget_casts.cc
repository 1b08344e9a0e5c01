#include "converter/passes/retarget_casts.h"

#include <onnx/onnx_pb.h>

namespace onnx_amp {

Status RetargetCasts(PassContext& context) {
  ConversionPlan& plan = context.plan;
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    const onnx::NodeProto* const_node = plan.node_order[n];
    if (const_node->op_type() != "Cast" || !const_node->domain().empty()) continue;
    const std::span<const DType> output_types = plan.OutputTypes(n);
    if (output_types.empty() || output_types[0] != plan.low_type) continue;
    auto* node = const_cast<onnx::NodeProto*>(const_node);
    for (auto& attr : *node->mutable_attribute()) {
      if (attr.name() != "to" || attr.i() != ToOnnx(DType::kFloat32)) continue;
      attr.set_i(ToOnnx(plan.low_type));
      ++context.report.casts_retargeted;
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
