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
#pragma once

#include <cstdint>

#include <dnnl.hpp>

#include "runtime/exec/thread_pool.h"

namespace onnx_amp::dnn {

// Whether PackWeights can write `layout` on this CPU: a 2-D float32 or bfloat16 desc of
// the form above, on a CPU with AVX-512 (BW).
bool PacksWeights(const dnnl::memory::desc& layout);

// Writes B into `out` (layout.get_size() bytes, laid out as `layout`, for which
// PacksWeights holds; B of layout's data type). B(k, n) is b[k * N + n], or b[n * K + k]
// when `transposed` (B given as a row-major N x K matrix, as Gemm's transB reads it).
// Bits are moved as they are.
void PackWeights(const void* b, bool transposed, const dnnl::memory::desc& layout, void* out, ThreadPool& threads);

}  // namespace onnx_amp::dnn
