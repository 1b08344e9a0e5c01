// Float32 rounded to bfloat16 in AVX-512 and AVX2 registers, for x86-64 files that include
// <immintrin.h> and check the CPU first: the bulk conversions (convert.cc) and the loops
// that round in registers (ops/common/float_vec_avx512.h, float_vec_avx2.h). Each 32-bit
// lane's high half becomes the bfloat16, ties to even (add 0x7FFF plus the kept lsb); a
// NaN is quieted instead (sign and top payload kept, bit 0x40 of the bfloat16 set). The
// low half is left over: shift it out for the bits, or clear it for the value as float32.
// The integer way, not VCVTNEPS2BF16, which flushes subnormals (convert.cc).
#pragma once

#include <immintrin.h>

namespace onnx_amp {

__attribute__((target("avx512f"))) inline __m512i RoundToBFloat16High(__m512i bits) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  const __m512i quieted = _mm512_or_si512(bits, _mm512_set1_epi32(0x400000));
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_blend_epi32(is_nan, rounded, quieted);
}

__attribute__((target("avx2"))) inline __m256i RoundToBFloat16High(__m256i bits) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  const __m256i quieted = _mm256_or_si256(bits, _mm256_set1_epi32(0x400000));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(rounded, quieted, is_nan);
}

}  // namespace onnx_amp
