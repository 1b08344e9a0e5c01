// ReverseSequence: reverses the first sequence_lens[b] steps of each batch entry.
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Status ReverseSequenceKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* lens_tensor, RequiredInput(context, 1));
  const int64_t time_axis = context.attr_int("time_axis", 0);
  const int64_t batch_axis = context.attr_int("batch_axis", 1);
  if (data->rank() < 2 || !((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0))) {
    return context.Error(ErrorCode::kInvalidModel, "time_axis and batch_axis must be 0 and 1 of a rank >= 2 input");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> lens, ReadInt64List(context, *lens_tensor, "sequence_lens"));
  const int64_t steps = data->dim(time_axis);
  const int64_t batch = data->dim(batch_axis);
  if (static_cast<int64_t>(lens.size()) != batch) {
    return context.Error(ErrorCode::kInvalidModel, "sequence_lens has " + std::to_string(lens.size()) +
                                                       " entries for a batch of " + std::to_string(batch));
  }
  for (int64_t len : lens) {
    if (len < 0 || len > steps) {
      return context.Error(ErrorCode::kInvalidArgument, "sequence length " + std::to_string(len) +
                                                            " is outside [0, " + std::to_string(steps) + "]");
    }
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), data->shape()));
  const int64_t inner = data->num_elements() / std::max<int64_t>(1, steps * batch);
  const size_t block = static_cast<size_t>(inner) * DTypeSize(data->dtype());
  const int64_t time_stride = time_axis == 0 ? batch : 1;
  const int64_t batch_stride = time_axis == 0 ? 1 : steps;
  const char* src = static_cast<const char*>(data->raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      std::memcpy(dst + (t * time_stride + b * batch_stride) * block,
                  src + (from * time_stride + b * batch_stride) * block, block);
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
