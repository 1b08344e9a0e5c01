// Schemas of the tensor family's ops of domain ai.onnx_amp: the fused gradient of
// Gather (kernel: gather_grad_cpu.cc).
#include <vector>

#include <onnx/defs/shape_inference.h>

#include "ops/common/onnx_amp_schema.h"
#include "ops/onnx_amp_schemas.h"

namespace onnx_amp {

std::vector<onnx::OpSchema> TensorOnnxAmpSchemas() {
  onnx::OpSchema gather = NewSchema("GatherGrad");
  gather.Input(0, "dY", "", "T")
      .Input(1, "indices", "", "Tind")
      .Input(2, "shape", "shape of the forward data", "tensor(int64)")
      .Output(0, "dX", "", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .TypeConstraint("Tind", kIndexTypes, "index types")
      .Attr("axis", "as the forward op", onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .TypeAndShapeInferenceFunction(
          [](onnx::InferenceContext& context) { onnx::propagateElemTypeFromInputToOutput(context, 0, 0); });
  std::vector<onnx::OpSchema> schemas;
  schemas.push_back(std::move(gather));
  return schemas;
}

}  // namespace onnx_amp
