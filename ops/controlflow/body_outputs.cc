#include "ops/controlflow/body_outputs.h"

#include <onnx/onnx_pb.h>

#include "ops/controlflow/axis_slices.h"

namespace onnx_amp {

Expected<Tensor> EmptyScanOutput(const KernelContext& context, std::string_view attribute, int output_index,
                                 int64_t axis) {
  const onnx::AttributeProto* body = context.attribute(attribute);
  if (body == nullptr || !body->has_g() || output_index >= body->g().output_size()) {
    return context.Error(ErrorCode::kInvalidModel, "body output " + std::to_string(output_index) + " is missing");
  }
  const onnx::TypeProto& type = body->g().output(output_index).type();
  const std::optional<DType> dtype =
      type.has_tensor_type() ? DTypeFromOnnx(type.tensor_type().elem_type()) : std::nullopt;
  if (!dtype || DTypeSize(*dtype) == 0) {
    return context.Error(ErrorCode::kUnsupported, "body output " + std::to_string(output_index) +
                                                      " has no tensor type to build an empty scan output from");
  }
  Shape part;
  bool all_static = type.tensor_type().has_shape();
  for (const onnx::TensorShapeProto::Dimension& dim : type.tensor_type().shape().dim()) {
    all_static = all_static && dim.has_dim_value();
    part.push_back(dim.dim_value());
  }
  if (!all_static || axis > static_cast<int64_t>(part.size())) return Tensor::Empty(*dtype, {0});
  return Tensor::Empty(*dtype, StackedShape(part, axis, 0));
}

}  // namespace onnx_amp
