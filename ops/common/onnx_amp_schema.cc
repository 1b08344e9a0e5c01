#include "ops/common/onnx_amp_schema.h"

#include <onnx/defs/shape_inference.h>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

onnx::OpSchema NewSchema(const char* name) {
  onnx::OpSchema schema;
  schema.SetName(name).SetDomain(std::string(kOnnxAmpDomain)).SinceVersion(1);
  return schema;
}

void Propagate(onnx::InferenceContext& context, size_t type_from, size_t shape_from, size_t output) {
  if (output >= context.getNumOutputs()) return;
  onnx::propagateElemTypeFromInputToOutput(context, type_from, output);
  if (onnx::hasInputShape(context, shape_from)) onnx::propagateShapeFromInputToOutput(context, shape_from, output);
}

onnx::OpSchema PointwiseGradSchema(const char* name, const char* second) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, "dY", "gradient of the forward output", "T")
      .Input(1, second, "forward value the derivative reads", "T")
      .Output(0, "dX", "gradient of the forward input", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) { Propagate(context, 0, 0, 0); });
  return schema;
}

}  // namespace onnx_amp
