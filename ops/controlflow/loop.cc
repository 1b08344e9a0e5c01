// Loop: runs the body while the trip count and the condition allow. Body inputs are
// (iteration number, condition, loop-carried values...); body outputs are (condition,
// loop-carried values..., scan outputs...). Scan outputs are stacked along a new axis 0.
#include <onnx/onnx_pb.h>

#include <limits>

#include "ops/controlflow/axis_slices.h"
#include "ops/controlflow/body_outputs.h"
#include "ops/controlflow/controlflow_kernels.h"

namespace onnx_amp {

Status LoopCpu(KernelContext& context) {
  const Tensor* trip_count = context.input(0);
  const Tensor* cond_input = context.num_inputs() > 1 ? context.input(1) : nullptr;
  if (trip_count == nullptr && cond_input == nullptr) {
    return context.Error(ErrorCode::kUnsupported, "a loop without trip count and condition never ends");
  }
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (trip_count != nullptr) {
    if (trip_count->dtype() != DType::kInt64 || trip_count->num_elements() != 1) {
      return context.Error(ErrorCode::kInvalidModel, "the trip count M must be one int64 element");
    }
    max_trips = *trip_count->data<int64_t>();
  }
  bool keep_going = true;
  if (cond_input != nullptr) {
    if (cond_input->dtype() != DType::kBool || cond_input->num_elements() != 1) {
      return context.Error(ErrorCode::kInvalidModel, "the condition must be one bool element");
    }
    keep_going = *cond_input->data<bool>();
  }

  const int num_carried = context.num_inputs() - 2;
  const int num_scans = context.num_outputs() - num_carried;
  if (num_carried < 0 || num_scans < 0) {
    return context.Error(ErrorCode::kInvalidModel, "more loop-carried inputs than outputs");
  }
  std::vector<Tensor> carried;
  for (int i = 0; i < num_carried; ++i) {
    const Tensor* value = context.input(2 + i);
    if (value == nullptr) return context.Error(ErrorCode::kUnsupported, "absent loop-carried inputs are not supported");
    carried.push_back(*value);
  }

  std::vector<std::vector<Tensor>> scans(num_scans);
  for (int64_t iteration = 0; iteration < max_trips && keep_going; ++iteration) {
    std::vector<Tensor> body_inputs;
    body_inputs.reserve(2 + carried.size());
    Tensor iteration_tensor = Tensor::Empty(DType::kInt64, {});
    *iteration_tensor.data<int64_t>() = iteration;
    Tensor cond_tensor = Tensor::Empty(DType::kBool, {});
    *cond_tensor.data<bool>() = keep_going;
    body_inputs.push_back(std::move(iteration_tensor));
    body_inputs.push_back(std::move(cond_tensor));
    for (Tensor& value : carried) body_inputs.push_back(std::move(value));

    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context.RunSubgraph("body", std::move(body_inputs)));
    if (static_cast<int>(outputs.size()) != 1 + num_carried + num_scans) {
      return context.Error(ErrorCode::kInvalidModel, "the body gives " + std::to_string(outputs.size()) +
                                                         " outputs, expected " +
                                                         std::to_string(1 + num_carried + num_scans));
    }
    // Without a condition input the body's condition output is ignored (ONNX spec).
    if (cond_input != nullptr) {
      const Tensor& cond = outputs[0];
      if (cond.dtype() != DType::kBool || cond.num_elements() != 1) {
        return context.Error(ErrorCode::kInvalidModel, "the body's condition must be one bool element");
      }
      keep_going = *cond.data<bool>();
    }
    carried.assign(outputs.begin() + 1, outputs.begin() + 1 + num_carried);
    for (int k = 0; k < num_scans; ++k) {
      const Tensor& part = outputs[1 + num_carried + k];
      if (!scans[k].empty() && (part.dtype() != scans[k][0].dtype() || part.shape() != scans[k][0].shape())) {
        return context.Error(ErrorCode::kInvalidModel,
                             "scan output " + std::to_string(k) + " changes shape or type between iterations (" +
                                 ShapeToString(scans[k][0].shape()) + " then " + ShapeToString(part.shape()) + ")");
      }
      scans[k].push_back(part);
    }
  }

  for (int i = 0; i < num_carried; ++i) context.SetOutput(i, std::move(carried[i]));
  for (int k = 0; k < num_scans; ++k) {
    if (scans[k].empty()) {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor empty, EmptyScanOutput(context, "body", 1 + num_carried + k, 0));
      context.SetOutput(num_carried + k, std::move(empty));
      continue;
    }
    const Tensor& first = scans[k][0];
    ONNX_AMP_ASSIGN_OR_RETURN(
        Tensor * stacked,
        context.AllocateOutput(num_carried + k, first.dtype(), StackedShape(first.shape(), 0, scans[k].size())));
    for (size_t t = 0; t < scans[k].size(); ++t) CopyIntoStack(scans[k][t], 0, static_cast<int64_t>(t), *stacked);
  }
  return Status::Ok();
}

}  // namespace onnx_amp
