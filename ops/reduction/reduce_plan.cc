#include "ops/reduction/reduce_plan.h"

namespace onnx_amp {

ReducePlan MakeReducePlan(const Shape& input, const std::vector<bool>& reduce, bool keepdims) {
  ReducePlan plan;
  plan.outputs = 1;
  plan.reduced = 1;
  for (size_t d = 0; d < input.size(); ++d) {
    if (reduce[d]) {
      plan.reduced *= input[d];
      if (keepdims) plan.output_shape.push_back(1);
    } else {
      plan.outputs *= input[d];
      plan.output_shape.push_back(input[d]);
    }
  }
  // Group the non-trivial dims into runs of kept / reduced axes.
  struct Group {
    bool reduced;
    int64_t size;
  };
  std::vector<Group> groups;
  for (size_t d = 0; d < input.size(); ++d) {
    if (input[d] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduce[d]) {
      groups.back().size *= input[d];
    } else {
      groups.push_back({reduce[d], input[d]});
    }
  }
  int reduced_groups = 0;
  for (const Group& g : groups) reduced_groups += g.reduced ? 1 : 0;
  if (reduced_groups <= 1) {
    plan.blocked = true;
    bool before = true;
    for (const Group& g : groups) {
      if (g.reduced) before = false;
      else if (before) plan.outer *= g.size;
      else plan.inner *= g.size;
    }
    if (reduced_groups == 0) {  // nothing reduced: every output reads one input
      plan.outer = plan.outputs;
      plan.inner = 1;
    }
    return plan;
  }
  // General form: offsets of the kept index space and of the reduced index space.
  std::vector<int64_t> strides(input.size(), 1);
  for (size_t d = input.size(); d-- > 1;) strides[d - 1] = strides[d] * input[d];
  plan.output_offsets = {0};
  plan.step_offsets = {0};
  for (size_t d = 0; d < input.size(); ++d) {
    std::vector<int64_t>& offsets = reduce[d] ? plan.step_offsets : plan.output_offsets;
    std::vector<int64_t> next;
    next.reserve(offsets.size() * input[d]);
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < input[d]; ++i) next.push_back(base + i * strides[d]);
    }
    offsets = std::move(next);
  }
  return plan;
}

Expected<std::vector<bool>> AxesMask(const KernelContext& context, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return context.Error(ErrorCode::kInvalidModel,
                           "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    }
    mask[axis < 0 ? axis + rank : axis] = true;
  }
  return mask;
}

Expected<std::vector<bool>> ReduceAxesMask(const KernelContext& context, int64_t rank, int axes_input_since) {
  std::vector<int64_t> axes;
  if (context.opset() >= axes_input_since) {
    if (const Tensor* tensor = context.input(1)) {
      if (tensor->dtype() != DType::kInt64) return context.Error(ErrorCode::kInvalidModel, "axes must be int64");
      axes.assign(tensor->data<int64_t>(), tensor->data<int64_t>() + tensor->num_elements());
    }
  } else {
    axes = context.attr_ints("axes");
  }
  if (axes.empty()) {
    const bool noop = context.attr_int("noop_with_empty_axes", 0) != 0;
    return std::vector<bool>(rank, !noop);
  }
  return AxesMask(context, axes, rank);
}

}  // namespace onnx_amp
