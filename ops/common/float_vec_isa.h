// Whether this CPU runs the loops written over float_vec_avx2.h and float_vec_avx512.h
// (few_rows_matmul.h, ops/conv/few_channels_conv.h); false on every other architecture.
#pragma once

namespace onnx_amp {

// AVX2 with FMA and F16C.
bool CpuHasFloatVecAvx2();
// AVX-512 F, BW and VL, on top of the above.
bool CpuHasFloatVecAvx512();

}  // namespace onnx_amp
