// float32 copies of float32, float16 and bfloat16 tensors and the one rounding back,
// for kernels that compute on whole float32 buffers (the fused gradients among them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// values[0, n) = tensor[begin, begin + n) as float32 (float32, float16 or bfloat16 tensors).
void LoadFloat32Block(const Tensor& tensor, int64_t begin, int64_t n, float* values);
// tensor[begin, begin + n) as float32: in place for a float32 tensor, else widened into
// scratch[0, n).
const float* Float32BlockOf(const Tensor& tensor, int64_t begin, int64_t n, float* scratch);
// out[begin, begin + n) = values[0, n) rounded once to out's dtype.
void StoreFloat32Block(const float* values, int64_t begin, int64_t n, Tensor& out);
// The elements of a float32, float16 or bfloat16 tensor as float32 (float32 tensors
// are copied too, so callers may modify the result).
std::vector<float> ToFloat32(const Tensor& tensor);
// Rounds float32 values once into a float32, float16 or bfloat16 tensor.
void StoreFromFloat32(const float* values, Tensor& out);
// The same for elements [begin, end) only (values indexed like out).
void StoreFromFloat32Range(const float* values, Tensor& out, int64_t begin, int64_t end);

// float32 copies of float32, float16 or bfloat16 tensors in the kernel's pooled work
// tensors, all made in one parallel pass (each pass ends in a barrier, and on a loaded
// machine every barrier waits for a descheduled thread). Widening is exact.
Expected<std::vector<Tensor>> Float32Copies(KernelContext& context, const std::vector<const Tensor*>& tensors);

// Whole rows of a float16/bfloat16 tensor that ForEachFloat32Row widens together, up to
// this many elements: short rows (attention over 32 keys, a 64-wide hidden state)
// otherwise paid two conversion calls each, and the transformer block's bfloat16
// attention softmax ran at 1.4x the float32 one's time.
inline constexpr int64_t kWidenedRowsElements = 4096;

// Calls block_fn(first, rows, in, out) over the rows [begin, end) of `cols` values of `x`,
// in blocks of consecutive rows, for a row-wise kernel (softmax, layer norm) that reads
// `in` and writes `out` as float32 (row r of the block at r * cols); `y` (x's dtype and
// shape) gets the results. float32 rows are read from x and written into y in place, in
// one block; float16/bfloat16 ones are widened whole rows at a time, up to
// kWidenedRowsElements, `in` and `out` then the same float32 rows, rounded into y once.
template <typename BlockFn>
void ForEachFloat32RowBlock(const Tensor& x, Tensor& y, int64_t cols, int64_t begin, int64_t end, BlockFn&& block_fn) {
  if (begin >= end) return;
  if (x.dtype() == DType::kFloat32) {
    block_fn(begin, end - begin, x.data<float>() + begin * cols, y.data<float>() + begin * cols);
    return;
  }
  const int64_t rows_per_group = std::max<int64_t>(1, kWidenedRowsElements / std::max<int64_t>(cols, 1));
  std::vector<float> rows(static_cast<size_t>(std::min(rows_per_group, end - begin) * cols));
  for (int64_t first = begin; first < end; first += rows_per_group) {
    const int64_t count = std::min(rows_per_group, end - first);
    LoadFloat32Block(x, first * cols, count * cols, rows.data());
    block_fn(first, count, rows.data(), rows.data());
    StoreFloat32Block(rows.data(), first * cols, count * cols, y);
  }
}

// The same, one row at a time: row_fn(row, in, out) with `in` and `out` that row's values.
template <typename RowFn>
void ForEachFloat32Row(const Tensor& x, Tensor& y, int64_t cols, int64_t begin, int64_t end, RowFn&& row_fn) {
  ForEachFloat32RowBlock(x, y, cols, begin, end, [&](int64_t first, int64_t rows, const float* in, float* out) {
    for (int64_t r = 0; r < rows; ++r) row_fn(first + r, in + r * cols, out + r * cols);
  });
}

// out[0, count) = in[0, count) rounded once to `dtype` and widened back, what a Cast to
// float32 of a float16/bfloat16 value holds; other dtypes copy. `in` may be `out`.
void RoundThrough(DType dtype, const float* in, float* out, int64_t count);

// Blocks of `size` elements of a float32, float16 or bfloat16 tensor as float32, for
// kernels that walk a tensor plane by plane: float32 data is read in place, the others
// are widened into the reader's buffer (valid until the next Read).
class Float32BlockReader {
 public:
  Float32BlockReader(const Tensor& tensor, int64_t size)
      : tensor_(tensor), size_(size), buffer_(static_cast<size_t>(tensor.dtype() == DType::kFloat32 ? 0 : size)) {}
  // Elements [offset, offset + size).
  const float* Read(int64_t offset) {
    return Float32BlockOf(tensor_, offset, size_, buffer_.data());
  }

 private:
  const Tensor& tensor_;
  int64_t size_;
  std::vector<float> buffer_;
};

// For the fused gradient kernels, which read float32, float16 and bfloat16 tensors as
// float32 and round each output element once to the dtype of dY.
// Input `index`, present and of a float32/float16/bfloat16 type.
Expected<const Tensor*> FloatInput(const KernelContext& context, int index);
// Allocates output `index` with `dtype` and `shape`, and stores float32 `values` in it
// (one rounding); does nothing when the output is omitted or unused.
Status WriteOutput(KernelContext& context, int index, DType dtype, const Shape& shape,
                   const std::vector<float>& values);

}  // namespace onnx_amp
