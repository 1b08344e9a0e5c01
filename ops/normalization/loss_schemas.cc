#include "ops/normalization/loss_schemas.h"

#include <string>

#include <onnx/defs/shape_inference.h>

#include "ops/common/onnx_amp_schema.h"

namespace onnx_amp {
namespace {

// A scalar loss, or [N, d1..dk] (the scores' shape without the class axis) for reduction none.
void SparseLossShape(onnx::InferenceContext& context) {
  onnx::propagateElemTypeFromInputToOutput(context, 0, 0);
  const onnx::AttributeProto* reduction = context.getAttribute("reduction");
  if (reduction == nullptr || reduction->s() != "none") {
    onnx::getOutputShape(context, 0);  // rank 0
    return;
  }
  if (!onnx::hasInputShape(context, 0)) return;
  const onnx::TensorShapeProto& scores = onnx::getInputShape(context, 0);
  onnx::TensorShapeProto* loss = onnx::getOutputShape(context, 0);
  for (int i = 0; i < scores.dim_size(); ++i) {
    if (i != 1) *loss->add_dim() = scores.dim(i);
  }
}

void SparseLossAttributes(onnx::OpSchema& schema) {
  schema.TypeConstraint("T", kFloatTypes, "floating types")
      .TypeConstraint("Tind", kIndexTypes, "index types")
      .Attr("reduction", "none, sum or mean (the sum over the weights of the counted elements)",
            onnx::AttributeProto::STRING, std::string("mean"))
      .Attr("ignore_index", "elements with this label count for nothing", onnx::AttributeProto::INT, false);
}

// (first [N, C, d1..dk], labels [N, d1..dk], [weights [C]]) -> loss
onnx::OpSchema SparseLoss(const char* name, const char* first, const char* first_doc) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, first, first_doc, "T")
      .Input(1, "labels", "class indices [N, d1..dk]", "Tind")
      .Input(2, "weights", "class weights [C]", "T", onnx::OpSchema::Optional)
      .Output(0, "loss", "scalar, or [N, d1..dk] for reduction none", "T");
  SparseLossAttributes(schema);
  return schema;
}

// (dLoss, forward [N, C, d1..dk], labels, [weights]) -> the gradient of the loss' first input
onnx::OpSchema SparseLossGrad(const char* name, const char* second, const char* second_doc) {
  onnx::OpSchema schema = NewSchema(name);
  schema.Input(0, "dLoss", "gradient of the loss", "T")
      .Input(1, second, second_doc, "T")
      .Input(2, "labels", "as the forward op", "Tind")
      .Input(3, "weights", "as the forward op", "T", onnx::OpSchema::Optional)
      .Output(0, "dX", "gradient of the forward op's first input", "T")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) { Propagate(context, 1, 1, 0); });
  SparseLossAttributes(schema);
  return schema;
}

}  // namespace

std::vector<onnx::OpSchema> LossOpSchemas() {
  std::vector<onnx::OpSchema> schemas;
  schemas.push_back(SparseLoss("SoftmaxCrossEntropyLoss", "scores", "logits [N, C, d1..dk]"));
  schemas.back()
      .Output(1, "log_prob", "log_softmax of the scores over axis 1", "T", onnx::OpSchema::Optional)
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        SparseLossShape(context);
        Propagate(context, 0, 0, 1);
      });
  schemas.push_back(SparseLoss("NegativeLogLikelihoodLoss", "input", "log-probabilities [N, C, d1..dk]"));
  schemas.back().TypeAndShapeInferenceFunction(SparseLossShape);
  schemas.push_back(SparseLossGrad("SoftmaxCrossEntropyLossGrad", "log_prob", "the forward op's log_prob"));
  schemas.push_back(SparseLossGrad("NegativeLogLikelihoodLossGrad", "input", "the forward op's input"));

  onnx::OpSchema mse = NewSchema("MeanSquaredError");
  mse.Input(0, "prediction", "", "T")
      .Input(1, "target", "of the prediction's shape", "T")
      .Output(0, "loss", "scalar: the mean over every element of (prediction - target)^2", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) {
        onnx::propagateElemTypeFromInputToOutput(context, 0, 0);
        onnx::getOutputShape(context, 0);  // rank 0
      });
  schemas.push_back(std::move(mse));
  onnx::OpSchema mse_grad = NewSchema("MeanSquaredErrorGrad");
  mse_grad.Input(0, "dLoss", "gradient of the loss (scalar)", "T")
      .Input(1, "prediction", "", "T")
      .Input(2, "target", "", "T")
      .Output(0, "dPrediction", "dLoss * 2 * (prediction - target) / size", "T")
      .TypeConstraint("T", kFloatTypes, "floating types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& context) { Propagate(context, 1, 1, 0); });
  schemas.push_back(std::move(mse_grad));
  return schemas;
}

}  // namespace onnx_amp
