#include "ops/training/training_schemas.h"

#include <mutex>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "ops/normalization/loss_schemas.h"
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

namespace {

// (dY, Y or X) -> dX, attributes as given.
onnx::OpSchema PointwiseGrad(const char* name, const char* second) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, "dY", "gradient of the forward output", "T")
      .Input(1, second, "forward value the derivative reads", "T")
      .Output(0, "dX", "gradient of the forward input", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) { Propagate(context, 0, 0, 0); });
  return schema;
}

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

// Scalar output `output` of element type `elem_type`.
void ScalarOutput(onnx::InferenceContext& context, size_t output, int32_t elem_type) {
  onnx::updateOutputElemType(context, output, elem_type);
  onnx::getOutputShape(context, output);  // rank 0
}

// The optimizer-step ops run on float32 master weights and their float32 gradients.
const char* const kFloat32 = "tensor(float)";

// (weight, gradient, slots..., learning_rate, [step], skip) -> new weight, new slots...
onnx::OpSchema UpdateSchema(const char* name, const std::vector<const char*>& slots, bool slots_optional,
                            bool takes_step) {
  onnx::OpSchema schema = NewSchema(name);
  const auto option = slots_optional ? onnx::OpSchema::Optional : onnx::OpSchema::Single;
  schema.Input(0, "weight", "float32 master weight", "T")
      .Input(1, "gradient", "unscaled float32 gradient of the weight's shape", "T");
  int input = 2;
  for (const char* slot : slots) schema.Input(input++, slot, "optimizer slot of the weight's shape", "T", option);
  schema.Input(input++, "learning_rate", "float32 scalar", kFloat32);
  if (takes_step) schema.Input(input++, "step", "int64 scalar: updates applied before this one", "tensor(int64)");
  schema.Input(input++, "skip", "bool scalar: when true the outputs are the inputs, bit for bit", "tensor(bool)");
  schema.Output(0, "new_weight", "", "T");
  int output = 1;
  for (const char* slot : slots) {
    schema.Output(output++, std::string("new_") + slot, "", "T", option);
  }
  schema.TypeConstraint("T", {kFloat32}, "float32")
      .Attr("in_place",
            "1: the new weight and slots are written into the input buffers, which become the outputs "
            "(for a caller that hands over its own tensors)",
            onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        for (size_t k = 0; k < context.getNumOutputs(); ++k) Propagate(context, 0, 0, k);
      });
  return schema;
}

std::vector<onnx::OpSchema> UpdateSchemas() {
  std::vector<onnx::OpSchema> schemas;
  onnx::OpSchema unscale = NewSchema("UnscaleAndCheck");
  unscale.Input(0, "scale", "float32 scalar loss scale; gradients are multiplied by 1/scale", kFloat32)
      .Input(1, "gradients", "scaled float32 gradients", "T", onnx::OpSchema::Variadic)
      .Output(0, "found_inf", "bool scalar: some scaled gradient held an inf or NaN", "tensor(bool)")
      .Output(1, "first_non_finite", "int64 scalar: index of the first such gradient, -1 when none",
              "tensor(int64)")
      .Output(2, "unscaled", "the gradients times 1/scale, in input order", "T", onnx::OpSchema::Variadic)
      .TypeConstraint("T", {kFloat32}, "float32")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        ScalarOutput(context, 0, onnx::TensorProto::BOOL);
        ScalarOutput(context, 1, onnx::TensorProto::INT64);
        for (size_t k = 2; k < context.getNumOutputs(); ++k) Propagate(context, k - 1, k - 1, k);
      });
  schemas.push_back(std::move(unscale));

  onnx::OpSchema clip = NewSchema("GlobalNormClip");
  clip.Input(0, "micro_batches", "int64 scalar: the gradients are sums over this many micro-batches",
             "tensor(int64)")
      .Input(1, "gradients", "float32 gradients", "T", onnx::OpSchema::Variadic)
      .Output(0, "clipped", "their mean, scaled so that its global L2 norm is at most max_norm", "T",
              onnx::OpSchema::Variadic)
      .TypeConstraint("T", {kFloat32}, "float32")
      .Attr("max_norm", "0: no clipping", onnx::AttributeProto::FLOAT, 0.0f)
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        for (size_t k = 0; k < context.getNumOutputs(); ++k) Propagate(context, k + 1, k + 1, k);
      });
  schemas.push_back(std::move(clip));

  // Defaults follow Keras, as OptimizerConfig does.
  schemas.push_back(UpdateSchema("SgdUpdate", {"velocity"}, true, false));
  schemas.back()
      .Attr("momentum", "0: plain SGD (no velocity)", onnx::AttributeProto::FLOAT, 0.0f)
      .Attr("nesterov", "1: Nesterov momentum", onnx::AttributeProto::INT, static_cast<int64_t>(0));
  for (const char* name : {"AdamUpdate", "AdamWUpdate"}) {
    schemas.push_back(UpdateSchema(name, {"m", "v"}, false, true));
    schemas.back()
        .Attr("beta1", "", onnx::AttributeProto::FLOAT, 0.9f)
        .Attr("beta2", "", onnx::AttributeProto::FLOAT, 0.999f)
        .Attr("epsilon", "", onnx::AttributeProto::FLOAT, 1e-7f);
  }
  schemas.back().Attr("weight_decay", "decoupled: w -= lr * weight_decay * w", onnx::AttributeProto::FLOAT, 0.004f);
  schemas.push_back(UpdateSchema("RmspropUpdate", {"v"}, false, false));
  schemas.back()
      .Attr("rho", "", onnx::AttributeProto::FLOAT, 0.9f)
      .Attr("epsilon", "", onnx::AttributeProto::FLOAT, 1e-7f);
  return schemas;
}

std::vector<onnx::OpSchema> AllSchemas() {
  std::vector<onnx::OpSchema> schemas;
  schemas.push_back(PointwiseGrad("ReluGrad", "X"));
  schemas.push_back(PointwiseGrad("SigmoidGrad", "Y"));
  schemas.push_back(PointwiseGrad("TanhGrad", "Y"));
  schemas.push_back(PointwiseGrad("GeluGrad", "X"));
  schemas.back().Attr("approximate", "none or tanh", onnx::AttributeProto::STRING, std::string("none"));
  for (const char* name : {"SoftmaxGrad", "LogSoftmaxGrad"}) {
    schemas.push_back(PointwiseGrad(name, "Y"));
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
  schemas.push_back(std::move(conv));

  schemas.push_back(PoolGrad("MaxPoolGrad"));
  schemas.push_back(PoolGrad("AveragePoolGrad"));
  schemas.back().Attr("count_include_pad", "as the forward op", onnx::AttributeProto::INT, static_cast<int64_t>(0));

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
  schemas.push_back(std::move(gather));

  for (onnx::OpSchema& schema : LossOpSchemas()) schemas.push_back(std::move(schema));
  for (onnx::OpSchema& schema : UpdateSchemas()) schemas.push_back(std::move(schema));
  return schemas;
}

}  // namespace

void RegisterTrainingOpSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    onnx::OpSchemaRegistry::DomainToVersionRange::Instance().AddDomainToVersion(std::string(kOnnxAmpDomain), 1, 1);
    for (onnx::OpSchema& schema : AllSchemas()) onnx::RegisterSchema(std::move(schema));
  });
}

}  // namespace onnx_amp
