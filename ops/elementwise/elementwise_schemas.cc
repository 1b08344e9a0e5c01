// Schemas of the element-wise family's ops of domain ai.onnx_amp: the fused activation
// gradients of the activation table (activations.h), (dY, X or Y) -> dX, each with the
// attributes it takes over from its forward op declared as that op's ONNX schema does.
#include <string>
#include <vector>

#include "ops/common/onnx_amp_schema.h"
#include "ops/elementwise/activations.h"
#include "ops/onnx_amp_schemas.h"
#include "runtime/core/status.h"

namespace onnx_amp {

std::vector<onnx::OpSchema> ElementwiseOnnxAmpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  for (const Activation& activation : Activations()) {
    if (activation.gradient_op.empty()) continue;
    const std::string name(activation.gradient_op);
    schemas.push_back(PointwiseGradSchema(name.c_str(), activation.slope_of == SlopeOf::kInput ? "X" : "Y"));
    const onnx::OpSchema* forward = onnx::OpSchemaRegistry::Schema(std::string(activation.op));
    for (std::string_view attribute : activation.attributes) {
      if (attribute.empty()) continue;
      ONNX_AMP_ASSERT(forward != nullptr && forward->attributes().count(std::string(attribute)) != 0,
                      "a fused gradient takes over an attribute its forward op's schema lacks");
      schemas.back().Attr(forward->attributes().at(std::string(attribute)));
    }
  }
  return schemas;
}

}  // namespace onnx_amp
