// Schemas of the normalization family's ops of domain ai.onnx_amp: the fused gradients
// of Softmax, LogSoftmax, LayerNormalization and BatchNormalization (kernels:
// softmax_grad_cpu.cc, normalization_grad_cpu.cc) and the losses (loss_schemas.cc).
#include <string>
#include <vector>

#include <onnx/defs/shape_inference.h>

#include "ops/common/onnx_amp_schema.h"
#include "ops/normalization/loss_schemas.h"
#include "ops/onnx_amp_schemas.h"

namespace onnx_amp {
namespace {

// (dY, X, scale, a, b) -> dX, dScale, dBias (the normalisation gradients).
onnx::OpSchema NormalizationGrad(const char* name, const char* a, const char* b) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, "dY", "", "T")
      .Input(1, "X", "", "T")
      .Input(2, "scale", "", "S")
      .Input(3, a, "", "U")
      .Input(4, b, "", "U")
      .Output(0, "dX", "", "T", onnx::OpSchema::Optional)
      .Output(1, "dScale", "", "S", onnx::OpSchema::Optional)
      .Output(2, "dBias", "", "S", onnx::OpSchema::Optional)
      .TypeConstraint("T", kFloatTypes, "floating types")
      // BatchNormalization-15 lets scale and bias differ from X (a float16 X with float32
      // parameters under mixed precision); their gradients take the parameters' type.
      .TypeConstraint("S", kFloatTypes, "parameter types")
      .TypeConstraint("U", kFloatTypes, "statistics types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        Propagate(context, 0, 1, 0);
        Propagate(context, 2, 2, 1);
        Propagate(context, 2, 2, 2);
      });
  return schema;
}

}  // namespace

std::vector<onnx::OpSchema> NormalizationOnnxAmpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  for (const char* name : {"SoftmaxGrad", "LogSoftmaxGrad"}) {
    schemas.push_back(PointwiseGradSchema(name, "Y"));
    schemas.back()
        .Attr("axis", "normalised axis", onnx::AttributeProto::INT, static_cast<int64_t>(-1))
        .Attr("coerced", "1: the dims from axis on form one block (before opset 13)", onnx::AttributeProto::INT,
              static_cast<int64_t>(0));
  }
  schemas.push_back(NormalizationGrad("LayerNormalizationGrad", "mean", "inv_std_dev"));
  schemas.back().Attr("axis", "first normalised axis", onnx::AttributeProto::INT, static_cast<int64_t>(-1));
  schemas.push_back(NormalizationGrad("BatchNormalizationGrad", "mean", "var"));
  schemas.back()
      .Attr("epsilon", "as the forward op", onnx::AttributeProto::FLOAT, 1e-5f)
      .Attr("training_mode", "1: batch statistics; 0: the given mean and var", onnx::AttributeProto::INT,
            static_cast<int64_t>(0));
  for (onnx::OpSchema& schema : LossOpSchemas()) schemas.push_back(std::move(schema));
  return schemas;
}

}  // namespace onnx_amp
