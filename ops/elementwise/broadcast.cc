#include "ops/elementwise/broadcast.h"

namespace onnx_amp {

Expected<Shape> BroadcastShapes(std::span<const Shape> shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape result(rank, 1);
  for (const Shape& shape : shapes) {
    const size_t pad = rank - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t dim = shape[d];
      int64_t& out = result[pad + d];
      if (dim == out || dim == 1) continue;
      if (out == 1) {
        out = dim;
        continue;
      }
      std::string message = "shapes cannot be broadcast:";
      for (const Shape& s : shapes) message.append(" ").append(ShapeToString(s));
      return InvalidArgument(message);
    }
  }
  return result;
}

Expected<BroadcastPlan> MakeBroadcastPlan(std::span<const Shape> shapes) {
  ONNX_AMP_ASSERT(shapes.size() <= kMaxBroadcastOperands, "too many broadcast operands");
  BroadcastPlan plan;
  ONNX_AMP_ASSIGN_OR_RETURN(plan.output_shape, BroadcastShapes(shapes));
  plan.total = NumElements(plan.output_shape);
  const size_t rank = plan.output_shape.size();

  // Element strides of each operand aligned to the output's trailing dims.
  std::vector<OperandOffsets> strides(rank, OperandOffsets{});
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& shape = shapes[k];
    const size_t pad = rank - shape.size();
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[pad + d][k] = shape[d] == 1 ? 0 : stride;
      stride *= shape[d];
    }
  }
  // Drop size-1 output dims, then merge a dim into its outer neighbour when every
  // operand's strides are contiguous across the pair.
  for (size_t d = 0; d < rank; ++d) {
    if (plan.output_shape[d] == 1) continue;
    if (!plan.dims.empty()) {
      const int64_t dim = plan.output_shape[d];
      bool mergeable = true;
      for (int k = 0; k < kMaxBroadcastOperands; ++k) {
        mergeable = mergeable && plan.strides.back()[k] == strides[d][k] * dim;
      }
      if (mergeable) {
        plan.dims.back() *= dim;
        plan.strides.back() = strides[d];
        continue;
      }
    }
    plan.dims.push_back(plan.output_shape[d]);
    plan.strides.push_back(strides[d]);
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    plan.strides.push_back(OperandOffsets{});
  }
  plan.inner_strides = plan.strides.back();
  return plan;
}

}  // namespace onnx_amp
