// Relu and ReluGrad over whole arrays, as ReluOp and ReluSlope (elementwise_math.h) give
// them: a negative value becomes +0; -0 and NaN stay. float16/bfloat16 on their bits,
// integer work the compiler vectorises, instead of widening each value to float32 and
// rounding the result back. Built for the widest vectors the CPU has (cpu_clones.h): the
// baseline build's 4-wide loop made the Relu after each convolution of a small CNN cost a
// tenth of its inference. ReluGrad with a bias gradient's sums, in one pass, too.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"

namespace onnx_amp {

// out[0, count) = Relu(in[0, count)) for `dtype` kFloat16 or kBFloat16; `out` may be `in`.
void ReluOnLowPrecisionBits(DType dtype, const uint16_t* in, uint16_t* out, int64_t count);

// dx[0, count) = ReluGrad(dy, y) for `dtype` kFloat16 or kBFloat16: the bits of widening
// both, dy * (y > 0 ? 1 : 0) in float32 and rounding back (dy where y > 0, else a zero
// of dy's sign; a NaN dy quieted, an infinite one times 0 the default NaN), without the
// conversions. `dx` may be `dy`.
void ReluGradOnLowPrecisionBits(DType dtype, const uint16_t* dy, const uint16_t* y, uint16_t* dx, int64_t count);

// dx = ReluGrad(dy, y) as ReluGradOnLowPrecisionBits gives it over `rows` rows of `width`
// values, each row `stride` values after the one before, and sums[j] += dx[r][j] widened
// to float32 for each row in order: a bias gradient's sums down the rows, the bits of
// AddRowToSums row after row (column_sums.h), in the pass that writes dx. AVX-512 loops
// (relu_grad_sums_avx512.cc) for where ReluGradRowsWithSumsOnAvx512() holds; elsewhere a
// caller runs ReluGrad and AddRowToSums row by row. `dtype` kFloat16 or kBFloat16; `dx`
// may be `dy`.
void ReluGradRowsWithSumsAvx512(DType dtype, const uint16_t* dy, const uint16_t* y, uint16_t* dx, int64_t rows,
                                int64_t width, int64_t stride, float* sums);
// The same for float32: dx = dy * (y > 0 ? 1 : 0), the multiply kept, as ReluGrad gives it.
void ReluGradRowsWithSumsAvx512(const float* dy, const float* y, float* dx, int64_t rows, int64_t width,
                                int64_t stride, float* sums);
// Whether the CPU has those loops' AVX512BW and ONNX_AMP_MAX_CPU_ISA allows AVX-512.
bool ReluGradRowsWithSumsOnAvx512();

// out[0, count) = Relu(in[0, count)) of float32 values; `out` may be `in`.
void ReluFloat32(const float* in, float* out, int64_t count);

}  // namespace onnx_amp
