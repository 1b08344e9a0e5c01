// Packs a matrix B (K x N) into the blocked layout oneDNN's AVX-512 matmul kernels read
// their weights in (format_tag::any picks it), zero-padded to whole blocks:
// - float32 (avx512_core): blocks of 16 rows by 64 columns, row-major within the block;
// - bfloat16 (avx512_core_bf16): blocks of 32 rows by 64 columns, each stored as 16 row
//   pairs x 64 columns x the pair's 2 values (VDPBF16PS's operand order).
//
// A product whose B changes from call to call (training's weights, and the dY of weight
// gradients) hands oneDNN a plain B, which its kernels then pack block by block inside
// the product, on every thread. Measured on a 2-core AVX512_BF16 EPYC: 1024 x 4096 x 4096
// products ran 84-89 ms that way against 80-81 ms on a packed B in bfloat16, 169-175 ms
// against 157-158 ms in float32. oneDNN's own reorder into the layout takes 3-12 ms on
// such a weight; this one pass at the memory's rate takes 1-4 ms.
//
// A float32 layout may also be written from a float16 or bfloat16 B, widened as it is
// packed: float16 products run on float32 kernels in panels (widened_panels.h), and one
// pass from the stored operand saves writing and reading a plain float32 copy.
#pragma once

#include <cstdint>

#include <dnnl.hpp>

#include "runtime/exec/thread_pool.h"

namespace onnx_amp::dnn {

// B (K x N, as layout's dims say) as it is stored. B(k, n) is data[k * leading + n], or
// data[n * leading + k] when `transposed` (a row-major N x K matrix, as Gemm's transB
// reads it, or a block of a wider one).
struct PackSource {
  const void* data = nullptr;
  // The layout's data type, or float16/bfloat16 for a float32 layout (widened exactly).
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;
  bool transposed = false;
  int64_t leading = 0;
};

// Whether PackWeights can write `layout` from a B of `source_type` on this CPU: a 2-D
// float32 or bfloat16 desc of the form above, on a CPU with AVX-512 (BW, VL).
bool PacksWeights(const dnnl::memory::desc& layout, dnnl::memory::data_type source_type);

// Writes B into `out` (layout.get_size() bytes, laid out as `layout`, for which
// PacksWeights holds). Bits of the layout's type are moved as they are.
void PackWeights(const PackSource& b, const dnnl::memory::desc& layout, void* out, ThreadPool& threads);

}  // namespace onnx_amp::dnn
