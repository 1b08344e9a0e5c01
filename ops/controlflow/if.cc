// If: runs then_branch or else_branch; the branch outputs become the node's outputs.
#include <onnx/onnx_pb.h>

#include "ops/controlflow/controlflow_kernels.h"

namespace onnx_amp {

Status IfCpu(KernelContext& context) {
  const Tensor* cond = context.input(0);
  if (cond == nullptr || cond->dtype() != DType::kBool || cond->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "the condition must be one bool element");
  }
  const bool take_then = *cond->data<bool>();
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                            context.RunSubgraph(take_then ? "then_branch" : "else_branch", {}));
  if (static_cast<int>(outputs.size()) != context.num_outputs()) {
    return context.Error(ErrorCode::kInvalidModel, "the branch gives " + std::to_string(outputs.size()) +
                                                       " outputs, the node has " + std::to_string(context.num_outputs()));
  }
  for (int i = 0; i < context.num_outputs(); ++i) context.SetOutput(i, std::move(outputs[i]));
  return Status::Ok();
}

}  // namespace onnx_amp
