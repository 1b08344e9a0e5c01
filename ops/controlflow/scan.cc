// Scan (opset 9+): iterates the body over slices of the scan inputs along their scan
// axes, threading N state values through; per-iteration scan outputs are stacked along
// their scan output axes. Directions 1 walk the input backwards / fill the output from
// the end.
#include <onnx/onnx_pb.h>

#include "ops/controlflow/axis_slices.h"
#include "ops/controlflow/body_outputs.h"
#include "ops/controlflow/controlflow_kernels.h"

namespace onnx_amp {
namespace {

// The attribute's values, or `count` zeros when absent; Error when the count is wrong.
Expected<std::vector<int64_t>> PerTensorAttr(const KernelContext& context, std::string_view name, int count) {
  std::vector<int64_t> values = context.attr_ints(name);
  if (!context.has_attribute(name)) values.assign(count, 0);
  if (static_cast<int>(values.size()) != count) {
    return context.Error(ErrorCode::kInvalidModel, std::string(name) + " has " + std::to_string(values.size()) +
                                                       " entries, expected " + std::to_string(count));
  }
  return values;
}

}  // namespace

Status ScanCpu(KernelContext& context) {
  if (context.opset() < 9) return context.Error(ErrorCode::kUnsupported, "Scan before opset 9 is not supported");
  const int num_scan_inputs = static_cast<int>(context.attr_int("num_scan_inputs", -1));
  const int num_state = context.num_inputs() - num_scan_inputs;
  const int num_scan_outputs = context.num_outputs() - num_state;
  if (num_scan_inputs < 1 || num_state < 0 || num_scan_outputs < 0) {
    return context.Error(ErrorCode::kInvalidModel, "inconsistent num_scan_inputs");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> input_directions,
                            PerTensorAttr(context, "scan_input_directions", num_scan_inputs));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> input_axes, PerTensorAttr(context, "scan_input_axes", num_scan_inputs));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> output_directions,
                            PerTensorAttr(context, "scan_output_directions", num_scan_outputs));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> output_axes,
                            PerTensorAttr(context, "scan_output_axes", num_scan_outputs));

  std::vector<Tensor> state;
  for (int i = 0; i < num_state; ++i) {
    const Tensor* value = context.input(i);
    if (value == nullptr) return context.Error(ErrorCode::kInvalidModel, "state input " + std::to_string(i) + " is absent");
    state.push_back(*value);
  }
  std::vector<const Tensor*> scan_inputs;
  int64_t iterations = -1;
  for (int j = 0; j < num_scan_inputs; ++j) {
    const Tensor* value = context.input(num_state + j);
    if (value == nullptr) return context.Error(ErrorCode::kInvalidModel, "scan input " + std::to_string(j) + " is absent");
    int64_t& axis = input_axes[j];
    if (axis < 0) axis += value->rank();
    if (axis < 0 || axis >= value->rank()) {
      return context.Error(ErrorCode::kInvalidModel, "scan input " + std::to_string(j) + " has no axis " +
                                                         std::to_string(input_axes[j]));
    }
    if (iterations >= 0 && value->dim(axis) != iterations) {
      return context.Error(ErrorCode::kInvalidModel, "scan inputs disagree on the sequence length");
    }
    iterations = value->dim(axis);
    scan_inputs.push_back(value);
  }

  std::vector<std::vector<Tensor>> scans(num_scan_outputs);
  for (int64_t t = 0; t < iterations; ++t) {
    std::vector<Tensor> body_inputs = state;
    for (int j = 0; j < num_scan_inputs; ++j) {
      const int64_t index = input_directions[j] == 1 ? iterations - 1 - t : t;
      body_inputs.push_back(SliceAlongAxis(*scan_inputs[j], input_axes[j], index));
    }
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context.RunSubgraph("body", std::move(body_inputs)));
    if (static_cast<int>(outputs.size()) != num_state + num_scan_outputs) {
      return context.Error(ErrorCode::kInvalidModel, "the body gives " + std::to_string(outputs.size()) +
                                                         " outputs, expected " +
                                                         std::to_string(num_state + num_scan_outputs));
    }
    state.assign(outputs.begin(), outputs.begin() + num_state);
    for (int k = 0; k < num_scan_outputs; ++k) {
      const Tensor& part = outputs[num_state + k];
      if (!scans[k].empty() && (part.dtype() != scans[k][0].dtype() || part.shape() != scans[k][0].shape())) {
        return context.Error(ErrorCode::kInvalidModel,
                             "scan output " + std::to_string(k) + " changes shape or type between iterations");
      }
      scans[k].push_back(part);
    }
  }

  for (int i = 0; i < num_state; ++i) context.SetOutput(i, std::move(state[i]));
  for (int k = 0; k < num_scan_outputs; ++k) {
    int64_t axis = output_axes[k];
    if (scans[k].empty()) {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor empty, EmptyScanOutput(context, "body", num_state + k, axis < 0 ? 0 : axis));
      context.SetOutput(num_state + k, std::move(empty));
      continue;
    }
    const Tensor& first = scans[k][0];
    if (axis < 0) axis += first.rank() + 1;
    if (axis < 0 || axis > first.rank()) {
      return context.Error(ErrorCode::kInvalidModel, "scan output " + std::to_string(k) + " has no axis " +
                                                         std::to_string(output_axes[k]));
    }
    const int64_t count = static_cast<int64_t>(scans[k].size());
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * stacked, context.AllocateOutput(num_state + k, first.dtype(),
                                                                       StackedShape(first.shape(), axis, count)));
    for (int64_t t = 0; t < count; ++t) {
      const int64_t position = output_directions[k] == 1 ? count - 1 - t : t;
      CopyIntoStack(scans[k][t], axis, position, *stacked);
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
