// Schemas of the conv family's ops of domain ai.onnx_amp: the fused gradients of Conv,
// MaxPool and AveragePool (kernels: window_grad_cpu.cc).
#include <string>
#include <vector>

#include <onnx/defs/shape_inference.h>

#include "ops/common/onnx_amp_schema.h"
#include "ops/onnx_amp_schemas.h"

namespace onnx_amp {
namespace {

// Windowed ops share the forward attributes.
void WindowAttributes(onnx::OpSchema& schema) {
  schema.Attr("auto_pad", "as the forward op", onnx::AttributeProto::STRING, std::string("NOTSET"))
      .Attr("dilations", "as the forward op", onnx::AttributeProto::INTS, false)
      .Attr("kernel_shape", "as the forward op", onnx::AttributeProto::INTS, false)
      .Attr("pads", "as the forward op", onnx::AttributeProto::INTS, false)
      .Attr("strides", "as the forward op", onnx::AttributeProto::INTS, false);
}

onnx::OpSchema PoolGrad(const char* name) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, "dY", "", "T")
      .Input(1, "X", "forward input", "T")
      .Output(0, "dX", "", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .Attr("ceil_mode", "as the forward op", onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) { Propagate(context, 0, 1, 0); });
  WindowAttributes(schema);
  return schema;
}

onnx::OpSchema ConvGrad() {
  onnx::OpSchema conv = NewSchema("ConvGrad");
  conv.Input(0, "dY", "", "T")
      .Input(1, "X", "", "T")
      .Input(2, "W", "", "T")
      .Output(0, "dX", "", "T", onnx::OpSchema::Optional)
      .Output(1, "dW", "", "T", onnx::OpSchema::Optional)
      .Output(2, "dB", "", "T", onnx::OpSchema::Optional)
      .TypeConstraint("T", kFloatTypes, "floating types")
      .Attr("group", "as the forward op", onnx::AttributeProto::INT, static_cast<int64_t>(1))
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        Propagate(context, 0, 1, 0);
        Propagate(context, 0, 2, 1);
        if (context.getNumOutputs() > 2) {
          onnx::propagateElemTypeFromInputToOutput(context, 0, 2);
          if (onnx::hasInputShape(context, 2)) {
            const onnx::TensorShapeProto& w = onnx::getInputShape(context, 2);
            if (w.dim_size() > 0) *onnx::getOutputShape(context, 2)->add_dim() = w.dim(0);
          }
        }
      });
  WindowAttributes(conv);
  return conv;
}

}  // namespace

std::vector<onnx::OpSchema> ConvOnnxAmpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  schemas.push_back(ConvGrad());
  schemas.push_back(PoolGrad("MaxPoolGrad"));
  schemas.push_back(PoolGrad("AveragePoolGrad"));
  schemas.back().Attr("count_include_pad", "as the forward op", onnx::AttributeProto::INT, static_cast<int64_t>(0));
  return schemas;
}

}  // namespace onnx_amp
