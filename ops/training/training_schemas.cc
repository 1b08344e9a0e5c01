// Schemas of the optimizer-step ops of domain ai.onnx_amp (kernels: update_ops.cc).
#include <string>
#include <vector>

#include <onnx/defs/shape_inference.h>

#include "ops/common/onnx_amp_schema.h"
#include "ops/onnx_amp_schemas.h"

namespace onnx_amp {
namespace {

// Scalar output `output` of element type `elem_type`.
void ScalarOutput(onnx::InferenceContext& context, size_t output, int32_t elem_type) {
  onnx::updateOutputElemType(context, output, elem_type);
  onnx::getOutputShape(context, output);  // rank 0
}

// The optimizer-step ops run on float32 master weights and their float32 gradients.
const char* const kFloat32 = "tensor(float)";

// (weight, gradient, slots..., learning_rate, [step], skip, [copy]) -> new weight, new
// slots..., [new copy]. The copy is the weight's low-precision copy that the training
// graph reads (runtime/train/weight_copies.h): rewritten from the new weight in the
// update's own pass, so that it is made once per optimizer step.
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
  const int copy_input = input;
  schema.Input(copy_input, "copy", "the weight rounded to float16 or bfloat16; given with new_copy", "C",
               onnx::OpSchema::Optional);
  schema.Output(0, "new_weight", "", "T");
  int output = 1;
  for (const char* slot : slots) {
    schema.Output(output++, std::string("new_") + slot, "", "T", option);
  }
  const int copy_output = output;
  schema.Output(copy_output, "new_copy", "the new weight rounded to the copy's type (to nearest even)", "C",
                onnx::OpSchema::Optional);
  schema.TypeConstraint("T", {kFloat32}, "float32")
      .TypeConstraint("C", {"tensor(float16)", "tensor(bfloat16)"}, "the low-precision copy's type")
      .Attr("in_place",
            "1: the new weight, slots and copy are written into the input buffers, which become the outputs "
            "(for a caller that hands over its own tensors)",
            onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .TypeAndShapeInferenceFunction([copy_input, copy_output](onnx::InferenceContext& context) {
        for (size_t k = 0; k < context.getNumOutputs(); ++k) {
          const bool copy = static_cast<int>(k) == copy_output;
          Propagate(context, copy ? copy_input : 0, copy ? copy_input : 0, k);
        }
      });
  return schema;
}

}  // namespace

std::vector<onnx::OpSchema> TrainingOnnxAmpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  onnx::OpSchema unscale = NewSchema("UnscaleAndCheck");
  unscale.Input(0, "scale", "float32 scalar loss scale; gradients are multiplied by 1/scale", kFloat32)
      .Input(1, "gradients", "scaled float32 gradients", "T", onnx::OpSchema::Variadic)
      .Output(0, "found_inf", "bool scalar: some scaled gradient held an inf or NaN", "tensor(bool)")
      .Output(1, "first_non_finite", "int64 scalar: index of the first such gradient, -1 when none",
              "tensor(int64)")
      .Output(2, "unscaled", "the gradients times 1/scale, in input order", "T", onnx::OpSchema::Variadic)
      .TypeConstraint("T", {kFloat32}, "float32")
      .Attr("scaled",
            "0: the scale is 1 on every step (loss scaling off), so the gradients are only checked and come back "
            "as they are, whatever a kernel can see of the scale",
            onnx::AttributeProto::INT, int64_t{1})
      .Attr("in_place",
            "1: the unscaled values may be written into the gradient buffers, which then are the "
            "outputs (for a caller that hands over its own tensors)",
            onnx::AttributeProto::INT, static_cast<int64_t>(0))
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

}  // namespace onnx_amp
