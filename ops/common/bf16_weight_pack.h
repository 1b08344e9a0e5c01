// Packs a bfloat16 matrix B (K x N) into the blocked layout oneDNN's AVX512_BF16 matmul
// kernels read their weights in (format_tag::any picks it): blocks of 32 rows by 64
// columns, each stored as 16 row pairs x 64 columns x the pair's 2 values (VDPBF16PS's
// operand order), zero-padded to whole blocks.
//
// A product whose B changes from call to call (training's bfloat16 weights, cast afresh
// every step) hands oneDNN a plain B, which its kernels then pack block by block inside
// the product, on every thread: on a 2-core AVX512_BF16 EPYC the MLP's 1024 x 4096 x 4096
// products ran 84-89 ms that way against 80-81 ms on a packed B. oneDNN's own reorder
// into the layout takes 3 ms (B plain) and 12 ms (B transposed); this one pass at the
// memory's rate takes about 1 ms.
#pragma once

#include <cstdint>

#include <dnnl.hpp>

#include "runtime/exec/thread_pool.h"

namespace onnx_amp::dnn {

// Whether PackBf16Weights can write `layout` on this CPU: a 2-D bfloat16 desc of the
// form above, on a CPU with AVX-512 (BW).
bool PacksBf16Weights(const dnnl::memory::desc& layout);

// Writes B into `out` (layout.get_size() bytes, laid out as `layout`, for which
// PacksBf16Weights holds). B(k, n) is b[k * N + n], or b[n * K + k] when `transposed`
// (B given as a row-major N x K matrix, as Gemm's transB reads it). Bits are moved as
// they are.
void PackBf16Weights(const uint16_t* b, bool transposed, const dnnl::memory::desc& layout, uint16_t* out,
                     ThreadPool& threads);

}  // namespace onnx_amp::dnn
