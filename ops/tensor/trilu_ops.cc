// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// axes and zeroes the rest.
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Status TriluKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  if (data->rank() < 2) return context.Error(ErrorCode::kInvalidModel, "input must have rank >= 2");
  int64_t k = 0;
  if (const Tensor* k_tensor = context.input(1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> values, ReadInt64List(context, *k_tensor, "k"));
    if (values.size() != 1) return context.Error(ErrorCode::kInvalidModel, "k must hold one element");
    k = values[0];
  }
  const bool upper = context.attr_int("upper", 1) != 0;
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), data->shape()));
  const int64_t rows = data->dim(data->rank() - 2);
  const int64_t cols = data->dim(data->rank() - 1);
  const int64_t matrices = rows * cols == 0 ? 0 : data->num_elements() / (rows * cols);
  const size_t width = DTypeSize(data->dtype());
  const char* src = static_cast<const char*>(data->raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      const size_t row = static_cast<size_t>((m * rows + i) * cols) * width;
      // Columns [keep_begin, keep_end) keep their value.
      const int64_t keep_begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t keep_end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      std::memset(dst + row, 0, cols * width);
      if (keep_end > keep_begin) {
        std::memcpy(dst + row + keep_begin * width, src + row + keep_begin * width, (keep_end - keep_begin) * width);
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
