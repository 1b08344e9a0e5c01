// Gradient rules of convolution and pooling. Conv and the windowed pools use fused
// ops of the training domain (ops/training) that take the forward attributes as they are.
#include "ops/gradient_context.h"
#include "ops/gradients.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

const std::vector<std::string> kWindowAttributes = {"auto_pad", "dilations", "kernel_shape", "pads", "strides"};

// dX = conv_transpose(dY, W); dW = correlate(X, dY); dB = sum of dY over N and space
// (fused: ConvGrad; an output is left empty when that gradient is not needed).
Status ConvGrad(GradientContext& c) {
  std::vector<std::string> outputs(3);
  for (int i = 0; i < 3; ++i) {
    if (c.NeedsGI(i)) outputs[i] = c.GI(i);
  }
  while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  Attributes attributes = c.CopyAttributes(kWindowAttributes);
  if (const onnx::AttributeProto* group = c.Attr("group")) attributes.push_back(*group);
  c.Emit("ConvGrad", {c.GO(0), c.I(0), c.I(1)}, outputs, std::move(attributes), kOnnxAmpDomain);
  return Status::Ok();
}

// dX routes each dY to the first maximum of its window (fused: MaxPoolGrad).
Status MaxPoolGrad(GradientContext& c) {
  Attributes attributes = c.CopyAttributes(kWindowAttributes);
  if (const onnx::AttributeProto* ceil_mode = c.Attr("ceil_mode")) attributes.push_back(*ceil_mode);
  c.Emit("MaxPoolGrad", {c.GO(0), c.I(0)}, {c.GI(0)}, std::move(attributes), kOnnxAmpDomain);
  return Status::Ok();
}

// dX spreads each dY evenly over its window's counted elements (fused: AveragePoolGrad).
Status AveragePoolGrad(GradientContext& c) {
  Attributes attributes = c.CopyAttributes(kWindowAttributes);
  for (const char* name : {"ceil_mode", "count_include_pad"}) {
    if (const onnx::AttributeProto* attribute = c.Attr(name)) attributes.push_back(*attribute);
  }
  c.Emit("AveragePoolGrad", {c.GO(0), c.I(0)}, {c.GI(0)}, std::move(attributes), kOnnxAmpDomain);
  return Status::Ok();
}

// dX = expand(dY) / (spatial size)
Status GlobalAveragePoolGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(8, "Expand"));
  const DType type = c.ValueType(c.I(0));
  const std::optional<Shape> in_shape = c.StaticShape(c.I(0));
  const std::optional<Shape> out_shape = c.StaticShape(c.O(0));
  std::string scale;
  if (in_shape && out_shape && NumElements(*in_shape) > 0) {
    scale = c.ConstScalar(static_cast<double>(NumElements(*out_shape)) / NumElements(*in_shape), type);
  } else {
    const std::string out_size = c.CastTo(c.EmitValue("Size", {c.O(0)}), type);
    scale = c.EmitValue("Div", {out_size, c.CastTo(c.EmitValue("Size", {c.I(0)}), type)});
  }
  const std::string expanded = c.EmitValue("Expand", {c.GO(0), c.ShapeOf(c.I(0))});
  c.Emit("Mul", {expanded, scale}, {c.GI(0)});
  return Status::Ok();
}

}  // namespace

void RegisterConvGradients(GradientRegistry& registry) {
  registry.Register("", "Conv", ConvGrad);
  registry.Register("", "MaxPool", MaxPoolGrad);
  registry.Register("", "AveragePool", AveragePoolGrad);
  registry.Register("", "GlobalAveragePool", GlobalAveragePoolGrad);
}

}  // namespace onnx_amp
