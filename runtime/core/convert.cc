// Bulk float32 <-> float16 / bfloat16 conversions. The scalar path loops over the
// functions of float16.h; the AVX2+F16C and AVX-512 paths are compiled with
// per-function target attributes, so the library itself stays baseline x86-64, and
// the widest path the CPU supports is chosen once per process.
#include "runtime/core/convert.h"

#include <cstring>

#include "runtime/core/cpu_isa_cap.h"
#include "runtime/core/float16.h"
#include "runtime/core/status.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_CONVERT_X86 1
#include <cpuid.h>
#if defined(__GNUC__) && !defined(__clang__)
// A false positive of GCC 12: its AVX-512 headers trip -Wmaybe-uninitialized on
// their own self-initialised _mm256_undefined_si256().
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#include "runtime/core/bfloat16_round_x86.h"
#else
#define ONNX_AMP_CONVERT_X86 0
#endif

namespace onnx_amp {
namespace {

using FloatToBitsFn = void (*)(const float*, uint16_t*, size_t);
using BitsToFloatFn = void (*)(const uint16_t*, float*, size_t);

struct ConvertFunctions {
  FloatToBitsFn float_to_half;
  BitsToFloatFn half_to_float;
  FloatToBitsFn float_to_bfloat16;
  BitsToFloatFn bfloat16_to_float;
};

void FloatToHalfScalar(const float* src, uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToHalfBits(src[i]);
}

void HalfToFloatScalar(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = HalfBitsToFloat(src[i]);
}

void FloatToBFloat16Scalar(const float* src, uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToBFloat16Bits(src[i]);
}

void BFloat16ToFloatScalar(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = BFloat16BitsToFloat(src[i]);
}

constexpr ConvertFunctions kScalarFunctions = {FloatToHalfScalar, HalfToFloatScalar,
                                               FloatToBFloat16Scalar, BFloat16ToFloatScalar};

#if ONNX_AMP_CONVERT_X86

#define ONNX_AMP_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define ONNX_AMP_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))

// ---- AVX2 + F16C: 8 lanes. AVX2 has no 16-bit masked store, so float16's last values
// (fewer than 8) go through one vector by way of a buffer of 8: its scalar conversion
// branches on every value, and rows of 14 pixels left 6 of each 14 to it. bfloat16's
// scalar tail is a shift and a rounding add. ----

// vcvtps2ph with an immediate rounding mode ignores MXCSR (rounding, DAZ, FTZ) and
// quiets NaNs keeping the top payload bits, exactly as FloatToHalfBits does.
ONNX_AMP_TARGET_AVX2 __m128i FloatToHalf8(__m256 values) { return _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT); }

ONNX_AMP_TARGET_AVX2 void FloatToHalfAvx2(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), FloatToHalf8(_mm256_loadu_ps(src + i)));
  }
  if (i == count) return;
  float wide[8] = {};
  uint16_t narrow[8];
  std::memcpy(wide, src + i, (count - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(narrow), FloatToHalf8(_mm256_loadu_ps(wide)));
  std::memcpy(dst + i, narrow, (count - i) * sizeof(uint16_t));
}

ONNX_AMP_TARGET_AVX2 void HalfToFloatAvx2(const uint16_t* src, float* dst, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(half));
  }
  if (i == count) return;
  uint16_t narrow[8] = {};
  float wide[8];
  std::memcpy(narrow, src + i, (count - i) * sizeof(uint16_t));
  _mm256_storeu_ps(wide, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(narrow))));
  std::memcpy(dst + i, wide, (count - i) * sizeof(float));
}

// The bfloat16 bits in the low half of each 32-bit lane.
ONNX_AMP_TARGET_AVX2 __m256i RoundToBFloat16Avx2(__m256i bits) { return _mm256_srli_epi32(RoundToBFloat16High(bits), 16); }

ONNX_AMP_TARGET_AVX2 void FloatToBFloat16Avx2(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i low = RoundToBFloat16Avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    const __m256i high = RoundToBFloat16Avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
    // packus interleaves 128-bit halves (low0 high0 low1 high1); the permute restores order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  FloatToBFloat16Scalar(src + i, dst + i, count - i);
}

ONNX_AMP_TARGET_AVX2 void BFloat16ToFloatAvx2(const uint16_t* src, float* dst, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i bf16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16), 16));
  }
  BFloat16ToFloatScalar(src + i, dst + i, count - i);
}

constexpr ConvertFunctions kAvx2Functions = {FloatToHalfAvx2, HalfToFloatAvx2, FloatToBFloat16Avx2,
                                             BFloat16ToFloatAvx2};

// ---- AVX-512 (F + BW): 16 lanes, masked loads/stores for the tail. ----

ONNX_AMP_TARGET_AVX512 __mmask16 TailMask(size_t remaining) {
  return static_cast<__mmask16>((1u << remaining) - 1u);  // remaining < 16
}

ONNX_AMP_TARGET_AVX512 void FloatToHalfAvx512(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i half = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), half);
  }
  if (i == count) return;
  const __mmask16 mask = TailMask(count - i);
  const __m256i half = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mask, src + i), _MM_FROUND_TO_NEAREST_INT);
  _mm512_mask_storeu_epi16(dst + i, mask, _mm512_castsi256_si512(half));
}

ONNX_AMP_TARGET_AVX512 void HalfToFloatAvx512(const uint16_t* src, float* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i half = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(half));
  }
  if (i == count) return;
  const __mmask16 mask = TailMask(count - i);
  const __m256i half = _mm512_castsi512_si256(_mm512_maskz_loadu_epi16(mask, src + i));
  _mm512_mask_storeu_ps(dst + i, mask, _mm512_cvtph_ps(half));
}

// Not VCVTNEPS2BF16 (AVX512_BF16): it flushes subnormal inputs and outputs to zero, so
// it cannot match the IEEE scalar path bit for bit.
ONNX_AMP_TARGET_AVX512 __m256i RoundToBFloat16Avx512(__m512i bits) {
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(RoundToBFloat16High(bits), 16));
}

ONNX_AMP_TARGET_AVX512 void FloatToBFloat16Avx512(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i bf16 = RoundToBFloat16Avx512(_mm512_loadu_si512(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bf16);
  }
  if (i == count) return;
  const __mmask16 mask = TailMask(count - i);
  const __m256i bf16 = RoundToBFloat16Avx512(_mm512_maskz_loadu_epi32(mask, src + i));
  _mm512_mask_storeu_epi16(dst + i, mask, _mm512_castsi256_si512(bf16));
}

ONNX_AMP_TARGET_AVX512 void BFloat16ToFloatAvx512(const uint16_t* src, float* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i bf16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16), 16));
  }
  if (i == count) return;
  const __mmask16 mask = TailMask(count - i);
  const __m256i bf16 = _mm512_castsi512_si256(_mm512_maskz_loadu_epi16(mask, src + i));
  _mm512_mask_storeu_epi32(dst + i, mask, _mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16), 16));
}

constexpr ConvertFunctions kAvx512Functions = {FloatToHalfAvx512, HalfToFloatAvx512, FloatToBFloat16Avx512,
                                               BFloat16ToFloatAvx512};

// VCVTNEPS2BF16 rounds to nearest even and quiets NaNs as RoundToBFloat16Avx512 does, in
// one instruction, but reads float32 subnormals as zero; 16 lanes holding one (rare in
// activations) take the integer path instead. Twice the integer path's rate on data in
// cache (27 against 14 G elements/s on 2 cores), 10-20% more out of it.
#define ONNX_AMP_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

ONNX_AMP_TARGET_AVX512_BF16 __m256i RoundToBFloat16Avx512Bf16(__m512 values) {
  const __m512i bits = _mm512_castps_si512(values);
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 subnormal = _mm512_mask_cmplt_epu32_mask(_mm512_test_epi32_mask(magnitude, magnitude), magnitude,
                                                           _mm512_set1_epi32(0x00800000));
  if (subnormal != 0) return RoundToBFloat16Avx512(bits);
  return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(values));
}

ONNX_AMP_TARGET_AVX512_BF16 void FloatToBFloat16Avx512Bf16(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), RoundToBFloat16Avx512Bf16(_mm512_loadu_ps(src + i)));
  }
  if (i == count) return;
  const __mmask16 mask = TailMask(count - i);
  const __m256i bf16 = RoundToBFloat16Avx512Bf16(_mm512_maskz_loadu_ps(mask, src + i));
  _mm512_mask_storeu_epi16(dst + i, mask, _mm512_castsi256_si512(bf16));
}

constexpr ConvertFunctions kAvx512Bf16Functions = {FloatToHalfAvx512, HalfToFloatAvx512, FloatToBFloat16Avx512Bf16,
                                                   BFloat16ToFloatAvx512};

struct CpuFeatures {
  bool avx2_f16c;
  bool avx512;
  bool avx512_bf16;
};

// F16C is CPUID.1:ECX bit 29, read directly because not every compiler's
// __builtin_cpu_supports knows "f16c".
bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// __builtin_cpu_supports also checks that the OS saves the YMM / ZMM state, which
// the F16C instructions need too. ONNX_AMP_MAX_CPU_ISA (cpu_isa_cap.h) caps them.
const CpuFeatures& DetectedCpuFeatures() {
  static const CpuFeatures features = [] {
    __builtin_cpu_init();
    return CpuFeatures{
        .avx2_f16c = CpuIsaAllowed(CpuIsa::kAvx2) && __builtin_cpu_supports("avx2") && CpuHasF16c(),
        .avx512 = CpuIsaAllowed(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw"),
        .avx512_bf16 = CpuIsaAllowed(CpuIsa::kAvx512Bf16) && __builtin_cpu_supports("avx512f") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16"),
    };
  }();
  return features;
}

#endif  // ONNX_AMP_CONVERT_X86

const ConvertFunctions& FunctionsFor(ConvertPath path) {
  ONNX_AMP_ASSERT(ConvertPathSupported(path), "conversion path not supported by this CPU");
  switch (path) {
    case ConvertPath::kScalar:
      return kScalarFunctions;
#if ONNX_AMP_CONVERT_X86
    case ConvertPath::kAvx2F16c:
      return kAvx2Functions;
    case ConvertPath::kAvx512:
      return kAvx512Functions;
    case ConvertPath::kAvx512Bf16:
      return kAvx512Bf16Functions;
#else
    case ConvertPath::kAvx2F16c:
    case ConvertPath::kAvx512:
    case ConvertPath::kAvx512Bf16:
      break;  // rejected by the assert above
#endif
  }
  return kScalarFunctions;
}

const ConvertFunctions& BestFunctions() {
  static const ConvertFunctions& best = []() -> const ConvertFunctions& {
    for (ConvertPath path : {ConvertPath::kAvx512Bf16, ConvertPath::kAvx512, ConvertPath::kAvx2F16c}) {
      if (ConvertPathSupported(path)) return FunctionsFor(path);
    }
    return kScalarFunctions;
  }();
  return best;
}

}  // namespace

bool ConvertPathSupported(ConvertPath path) {
  switch (path) {
    case ConvertPath::kScalar:
      return true;
#if ONNX_AMP_CONVERT_X86
    case ConvertPath::kAvx2F16c:
      return DetectedCpuFeatures().avx2_f16c;
    case ConvertPath::kAvx512:
      return DetectedCpuFeatures().avx512;
    case ConvertPath::kAvx512Bf16:
      return DetectedCpuFeatures().avx512_bf16;
#else
    case ConvertPath::kAvx2F16c:
    case ConvertPath::kAvx512:
    case ConvertPath::kAvx512Bf16:
      return false;
#endif
  }
  return false;
}

std::string_view ConvertPathName(ConvertPath path) {
  switch (path) {
    case ConvertPath::kScalar: return "scalar";
    case ConvertPath::kAvx2F16c: return "avx2-f16c";
    case ConvertPath::kAvx512: return "avx512";
    case ConvertPath::kAvx512Bf16: return "avx512-bf16";
  }
  return "unknown";
}

void ConvertFloatToHalf(const float* src, uint16_t* dst, size_t count) {
  BestFunctions().float_to_half(src, dst, count);
}

void ConvertHalfToFloat(const uint16_t* src, float* dst, size_t count) {
  BestFunctions().half_to_float(src, dst, count);
}

void ConvertFloatToBFloat16(const float* src, uint16_t* dst, size_t count) {
  BestFunctions().float_to_bfloat16(src, dst, count);
}

void ConvertBFloat16ToFloat(const uint16_t* src, float* dst, size_t count) {
  BestFunctions().bfloat16_to_float(src, dst, count);
}

void ConvertFloatToHalfWith(ConvertPath path, const float* src, uint16_t* dst, size_t count) {
  FunctionsFor(path).float_to_half(src, dst, count);
}

void ConvertHalfToFloatWith(ConvertPath path, const uint16_t* src, float* dst, size_t count) {
  FunctionsFor(path).half_to_float(src, dst, count);
}

void ConvertFloatToBFloat16With(ConvertPath path, const float* src, uint16_t* dst, size_t count) {
  FunctionsFor(path).float_to_bfloat16(src, dst, count);
}

void ConvertBFloat16ToFloatWith(ConvertPath path, const uint16_t* src, float* dst, size_t count) {
  FunctionsFor(path).bfloat16_to_float(src, dst, count);
}

}  // namespace onnx_amp
