// Bulk conversions between float32 and float16 / bfloat16. Each picks, once per
// process, the widest path the CPU supports (AVX-512, then AVX2+F16C, then scalar),
// and every path gives the same bits as the scalar functions in float16.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace onnx_amp {

void ConvertFloatToHalf(const float* src, uint16_t* dst, size_t count);
void ConvertHalfToFloat(const uint16_t* src, float* dst, size_t count);
void ConvertFloatToBFloat16(const float* src, uint16_t* dst, size_t count);
void ConvertBFloat16ToFloat(const uint16_t* src, float* dst, size_t count);

// The implementation levels, exposed so tests can compare each with the scalar one.
// kAvx512Bf16 is kAvx512 with VCVTNEPS2BF16 for float32 -> bfloat16 (AVX512_BF16).
enum class ConvertPath { kScalar, kAvx2F16c, kAvx512, kAvx512Bf16 };
bool ConvertPathSupported(ConvertPath path);
std::string_view ConvertPathName(ConvertPath path);
void ConvertFloatToHalfWith(ConvertPath path, const float* src, uint16_t* dst, size_t count);
void ConvertHalfToFloatWith(ConvertPath path, const uint16_t* src, float* dst, size_t count);
void ConvertFloatToBFloat16With(ConvertPath path, const float* src, uint16_t* dst, size_t count);
void ConvertBFloat16ToFloatWith(ConvertPath path, const uint16_t* src, float* dst, size_t count);

}  // namespace onnx_amp
