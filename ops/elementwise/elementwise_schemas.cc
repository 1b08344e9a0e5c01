// Schemas of the element-wise family's ops of domain ai.onnx_amp: the fused activation
// gradients (kernels: activation_grad_cpu.cc).
#include <string>
#include <vector>

#include "ops/common/onnx_amp_schema.h"
#include "ops/onnx_amp_schemas.h"

namespace onnx_amp {

std::vector<onnx::OpSchema> ElementwiseOnnxAmpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  schemas.push_back(PointwiseGradSchema("ReluGrad", "X"));
  schemas.push_back(PointwiseGradSchema("SigmoidGrad", "Y"));
  schemas.push_back(PointwiseGradSchema("TanhGrad", "Y"));
  schemas.push_back(PointwiseGradSchema("GeluGrad", "X"));
  schemas.back().Attr("approximate", "none or tanh", onnx::AttributeProto::STRING, std::string("none"));
  return schemas;
}

}  // namespace onnx_amp
