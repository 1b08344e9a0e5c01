#include "ops/common/weight_pack.h"

#include <algorithm>

#include "ops/common/converting_relayout.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_PACK_X86 1
#if defined(__GNUC__) && !defined(__clang__)
// A false positive of GCC 12: its AVX-512 headers trip -Wmaybe-uninitialized on
// their own self-initialised _mm256_undefined_si256().
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "ops/common/lane_mask_avx512.h"
#include "ops/common/transpose16_avx512.h"

#define ONNX_AMP_PACK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#else
#define ONNX_AMP_PACK_X86 0
#endif

namespace onnx_amp::dnn {
namespace {

constexpr int64_t kBlockColumns = 64;  // N per block, both types
constexpr int64_t kPairs = 16;         // bfloat16: row pairs per block (K = 32)
constexpr int64_t kFloatRows = 16;     // float32: rows per block
// Blocks per parallel chunk (4 KiB each).
constexpr int64_t kBlocksPerChunk = 16;

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// K per block of a layout of data type `type`.
int64_t BlockRows(dnnl_data_type_t type) { return type == dnnl_bf16 ? 2 * kPairs : kFloatRows; }

bool HasPackedForm(const dnnl::memory::desc& layout) {
  const dnnl_memory_desc_t& d = layout.data;
  if (d.ndims != 2 || (d.data_type != dnnl_bf16 && d.data_type != dnnl_f32) || d.format_kind != dnnl_blocked ||
      d.offset0 != 0 || d.extra.flags != 0) {
    return false;
  }
  const dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
  const bool inner = d.data_type == dnnl_bf16
                         ? blocking.inner_nblks == 3 && blocking.inner_blks[0] == kPairs &&
                               blocking.inner_blks[1] == kBlockColumns && blocking.inner_blks[2] == 2 &&
                               blocking.inner_idxs[0] == 0 && blocking.inner_idxs[1] == 1 && blocking.inner_idxs[2] == 0
                         : blocking.inner_nblks == 2 && blocking.inner_blks[0] == kFloatRows &&
                               blocking.inner_blks[1] == kBlockColumns && blocking.inner_idxs[0] == 0 &&
                               blocking.inner_idxs[1] == 1;
  const int64_t rows = BlockRows(d.data_type), block_elements = rows * kBlockColumns;
  return inner && d.padded_dims[0] == RoundUp(d.dims[0], rows) && d.padded_dims[1] == RoundUp(d.dims[1], kBlockColumns) &&
         blocking.strides[0] % block_elements == 0 && blocking.strides[1] % block_elements == 0;
}

#if ONNX_AMP_PACK_X86

// The mask of the first `count` of 32 16-bit lanes.
__mmask32 FirstOf32(int64_t count) {
  return count >= 32 ? __mmask32(0xFFFFFFFFu) : count <= 0 ? __mmask32(0) : __mmask32((1u << count) - 1);
}

// Block (row_block, column_block) of a plain bfloat16 B: each pair of rows interleaved
// value by value.
ONNX_AMP_PACK_TARGET void PackPlainPairBlock(const PackSource& b, int64_t k, int64_t n, int64_t row_block,
                                             int64_t column_block, void* out) {
  // permutex2var indices: lane 2i takes the first row's value i, lane 2i + 1 the second's
  // (the second source's lanes are numbered from 32); `high` the same from value 16 on.
  alignas(64) static constexpr uint16_t kLow[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                     24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  const auto* from = static_cast<const uint16_t*>(b.data);
  auto* block = static_cast<uint16_t*>(out);
  const int64_t column = column_block * kBlockColumns;
  const int64_t columns = std::min(kBlockColumns, n - column);
  const __mmask32 masks[2] = {FirstOf32(columns), FirstOf32(columns - 32)};
  for (int64_t pair = 0; pair < kPairs; ++pair) {
    const int64_t row = row_block * 2 * kPairs + 2 * pair;
    for (int half = 0; half < 2; ++half) {
      const uint16_t* first_row = from + row * b.leading + column + 32 * half;
      const __m512i first = row < k ? _mm512_maskz_loadu_epi16(masks[half], first_row) : _mm512_setzero_si512();
      const __m512i second =
          row + 1 < k ? _mm512_maskz_loadu_epi16(masks[half], first_row + b.leading) : _mm512_setzero_si512();
      uint16_t* to = block + pair * 2 * kBlockColumns + half * 64;
      _mm512_storeu_si512(to, _mm512_permutex2var_epi16(first, low, second));
      _mm512_storeu_si512(to + 32, _mm512_permutex2var_epi16(first, high, second));
    }
  }
}

// Block (row_block, column_block) of a transposed bfloat16 B: a column's 32 values of
// the block are 16 pairs in a row already, so each group of 16 columns is a 16 x 16
// transpose of 32-bit pairs.
ONNX_AMP_PACK_TARGET void PackTransposedPairBlock(const PackSource& b, int64_t k, int64_t n, int64_t row_block,
                                                  int64_t column_block, void* out) {
  const auto* from = static_cast<const uint16_t*>(b.data);
  auto* block = static_cast<uint16_t*>(out);
  const int64_t row = row_block * 2 * kPairs;
  const __mmask32 mask = FirstOf32(k - row);
  for (int64_t group = 0; group < kBlockColumns / 16; ++group) {
    const int64_t column = column_block * kBlockColumns + group * 16;
    __m512 pairs[16];
    for (int64_t c = 0; c < 16; ++c) {
      pairs[c] = column + c < n
                     ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, from + (column + c) * b.leading + row))
                     : _mm512_setzero_ps();
    }
    Transpose16(pairs);
    for (int64_t pair = 0; pair < kPairs; ++pair) {
      _mm512_storeu_ps(reinterpret_cast<float*>(block + pair * 2 * kBlockColumns + group * 32), pairs[pair]);
    }
  }
}

// 16 values of B's type `Source` from `data` + `index` elements, the lanes outside
// `mask` zero, as float32 (float16 and bfloat16 widened exactly).
template <dnnl_data_type_t Source>
ONNX_AMP_PACK_TARGET __m512 LoadFloats(const void* data, int64_t index, __mmask16 mask) {
  if constexpr (Source == dnnl_f32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(data) + index);
  } else {
    const __m256i bits = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(data) + index);
    if constexpr (Source == dnnl_f16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
}

// Block (row_block, column_block) of a plain B into a float32 layout: 16 row pieces of
// 64 values.
template <dnnl_data_type_t Source>
ONNX_AMP_PACK_TARGET void PackPlainFloatBlock(const PackSource& b, int64_t k, int64_t n, int64_t row_block,
                                              int64_t column_block, void* out) {
  auto* block = static_cast<float*>(out);
  const int64_t column = column_block * kBlockColumns;
  const int64_t columns = std::min(kBlockColumns, n - column);
  for (int64_t r = 0; r < kFloatRows; ++r) {
    const int64_t row = row_block * kFloatRows + r;
    for (int64_t q = 0; q < kBlockColumns / 16; ++q) {
      const __m512 values = row < k ? LoadFloats<Source>(b.data, row * b.leading + column + 16 * q,
                                                         FirstLanes(columns - 16 * q))
                                    : _mm512_setzero_ps();
      _mm512_storeu_ps(block + r * kBlockColumns + 16 * q, values);
    }
  }
}

// Block (row_block, column_block) of a transposed B into a float32 layout: each group of
// 16 columns is a 16 x 16 transpose.
template <dnnl_data_type_t Source>
ONNX_AMP_PACK_TARGET void PackTransposedFloatBlock(const PackSource& b, int64_t k, int64_t n, int64_t row_block,
                                                   int64_t column_block, void* out) {
  auto* block = static_cast<float*>(out);
  const int64_t row = row_block * kFloatRows;
  const __mmask16 mask = FirstLanes(k - row);
  for (int64_t group = 0; group < kBlockColumns / 16; ++group) {
    const int64_t column = column_block * kBlockColumns + group * 16;
    __m512 values[16];
    for (int64_t c = 0; c < 16; ++c) {
      values[c] = column + c < n ? LoadFloats<Source>(b.data, (column + c) * b.leading + row, mask) : _mm512_setzero_ps();
    }
    Transpose16(values);
    for (int64_t r = 0; r < kFloatRows; ++r) _mm512_storeu_ps(block + r * kBlockColumns + group * 16, values[r]);
  }
}

using PackBlockFunction = void (*)(const PackSource&, int64_t, int64_t, int64_t, int64_t, void*);

template <dnnl_data_type_t Source>
PackBlockFunction FloatBlockFunction(bool transposed) {
  return transposed ? PackTransposedFloatBlock<Source> : PackPlainFloatBlock<Source>;
}

#endif  // ONNX_AMP_PACK_X86

}  // namespace

bool PacksWeights(const dnnl::memory::desc& layout, dnnl::memory::data_type source_type) {
#if ONNX_AMP_PACK_X86
  using dt = dnnl::memory::data_type;
  const dt type = layout.data_type();
  const bool widens = type == dt::f32 && (source_type == dt::f16 || source_type == dt::bf16);
  __builtin_cpu_init();
  return (source_type == type || widens) && HasPackedForm(layout) && TransposesSupported() &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
  (void)layout, (void)source_type;
  return false;
#endif
}

void PackWeights(const PackSource& b, const dnnl::memory::desc& layout, void* out, ThreadPool& threads) {
#if ONNX_AMP_PACK_X86
  const dnnl_memory_desc_t& d = layout.data;
  const int64_t k = d.dims[0], n = d.dims[1];
  const int64_t row_blocks = d.padded_dims[0] / BlockRows(d.data_type), column_blocks = d.padded_dims[1] / kBlockColumns;
  const int64_t element_size = d.data_type == dnnl_bf16 ? 2 : 4;
  const int64_t row_stride = d.format_desc.blocking.strides[0] * element_size;
  const int64_t column_stride = d.format_desc.blocking.strides[1] * element_size;
  using dt = dnnl::memory::data_type;
  PackBlockFunction pack_block = nullptr;
  if (d.data_type == dnnl_bf16) {
    pack_block = b.transposed ? PackTransposedPairBlock : PackPlainPairBlock;
  } else if (b.type == dt::f16) {
    pack_block = FloatBlockFunction<dnnl_f16>(b.transposed);
  } else if (b.type == dt::bf16) {
    pack_block = FloatBlockFunction<dnnl_bf16>(b.transposed);
  } else {
    pack_block = FloatBlockFunction<dnnl_f32>(b.transposed);
  }
  auto* to = static_cast<char*>(out);
  threads.ParallelFor(row_blocks * column_blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      const int64_t row_block = index % row_blocks, column_block = index / row_blocks;
      pack_block(b, k, n, row_block, column_block, to + row_block * row_stride + column_block * column_stride);
    }
  });
#else
  (void)b, (void)layout, (void)out, (void)threads;
#endif
}

}  // namespace onnx_amp::dnn
