#include "ops/conv/pool_2d.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#include "ops/common/float_vec_avx2.h"
#endif

#include "ops/common/converting_relayout.h"
#include "ops/common/elementwise_math.h"
#include "ops/common/float_vec_isa.h"
#include "ops/common/float_compute.h"
#include "ops/common/relu_bits.h"
#include "ops/conv/max_pool_rule.h"
#include "runtime/core/cpu_isa_cap.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Outputs per parallel chunk: waking a thread for less costs more than it saves.
constexpr int64_t kOutputsPerChunk = 1 << 14;

TapRange Taps(const WindowGeometry& g, size_t axis, int64_t o) {
  const int64_t start = o * g.strides[axis] - g.pads_begin[axis];
  const int64_t stop = start + g.kernel[axis];
  const int64_t padded = std::min(stop, g.in[axis] + g.pads_end[axis]) - std::max(start, -g.pads_begin[axis]);
  return {std::max<int64_t>(start, 0), std::min(stop, g.in[axis]), padded};
}

// The max (NaN wins, the first of equal values kept) or the mean of a window's taps
// rows x cols of plane x (in_w wide).
template <typename T>
ComputeType<T> PoolWindow(const T* x, int64_t in_w, const TapRange& rows, const TapRange& cols, bool max,
                          bool count_include_pad) {
  using Acc = ComputeType<T>;
  if (max) {
    if (rows.begin >= rows.end || cols.begin >= cols.end) return -std::numeric_limits<Acc>::infinity();
    // Starting from the first tap, which the comparison then keeps, lets the rule run
    // without branches (a taken-or-not branch per tap mispredicts half the time).
    Acc result = LoadValue(x[rows.begin * in_w + cols.begin]);
    for (int64_t h = rows.begin; h < rows.end; ++h) {
      for (int64_t w = cols.begin; w < cols.end; ++w) {
        const Acc value = LoadValue(x[h * in_w + w]);
        const bool take = (value > result) | (std::isnan(value) & !std::isnan(result));
        result = take ? value : result;
      }
    }
    return result;
  }
  Acc sum = 0;
  for (int64_t h = rows.begin; h < rows.end; ++h) {
    for (int64_t w = cols.begin; w < cols.end; ++w) sum += LoadValue(x[h * in_w + w]);
  }
  const int64_t inside = std::max<int64_t>(rows.end - rows.begin, 0) * std::max<int64_t>(cols.end - cols.begin, 0);
  return sum / static_cast<Acc>(count_include_pad ? rows.padded * cols.padded : inside);
}

std::atomic<bool>& Pool2x2Avx512Setting() {
#if defined(__x86_64__)
  static std::atomic<bool> setting{CpuIsaAllowed(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512f") != 0};
#else
  static std::atomic<bool> setting{false};
#endif
  return setting;
}

}  // namespace

bool Pool2x2UsesAvx512() { return Pool2x2Avx512Setting().load(std::memory_order_relaxed); }

#if defined(__x86_64__)
bool PoolsRunAvx2() {
  static const bool avx2 = CpuHasFloatVecAvx2();
  return avx2;
}
#endif

bool SetPool2x2UsesAvx512(bool use) {
#if defined(__x86_64__)
  ONNX_AMP_ASSERT(!use || __builtin_cpu_supports("avx512f"), "this CPU lacks the AVX-512 pool kernels asked for");
#else
  ONNX_AMP_ASSERT(!use, "AVX-512 pool kernels exist on x86-64 only");
#endif
  return Pool2x2Avx512Setting().exchange(use);
}

bool Tiles2x2(const WindowGeometry& g) {
  if (!Pool2dApplies(g)) return false;
  for (size_t axis = 0; axis < 2; ++axis) {
    if (g.kernel[axis] != 2 || g.strides[axis] != 2 || g.pads_begin[axis] != 0 || 2 * g.out[axis] != g.in[axis]) {
      return false;
    }
  }
  return true;
}

PlaneWindows ResolveWindows(const WindowGeometry& g) {
  PlaneWindows p;
  for (int64_t oh = 0; oh < g.out[0]; ++oh) p.rows.push_back(Taps(g, 0, oh));
  for (int64_t ow = 0; ow < g.out[1]; ++ow) p.cols.push_back(Taps(g, 1, ow));
  auto whole = [&](int64_t ow) { return p.cols[ow].end - p.cols[ow].begin == g.kernel[1]; };
  while (p.interior_begin < g.out[1] && !whole(p.interior_begin)) ++p.interior_begin;
  p.interior_end = p.interior_begin;
  while (p.interior_end < g.out[1] && whole(p.interior_end)) ++p.interior_end;
  return p;
}

namespace {

// One output row's max or mean over the interior columns into acc[ow], each tap one
// pass over the columns, in the scalar path's tap order (so the same bits). For the max,
// tap[ow] gets the winning tap's offset within the plane when tap is not null (32 bits,
// as wide as the floats, so the selection vectorises; MaxPool2dArgmax checks the size).
template <typename T>
void PoolRowInterior(const T* x, const WindowGeometry& g, const PlaneWindows& p, const TapRange& rows, bool max,
                     bool count_include_pad, ComputeType<T>* acc, int32_t* tap) {
  using Acc = ComputeType<T>;
  const int64_t in_w = g.in[1], stride = g.strides[1], begin = p.interior_begin, end = p.interior_end;
  const int64_t left = -g.pads_begin[1];  // input column of tap 0 of output 0
  if (max) {
    const int64_t first = rows.begin * in_w + left;
    for (int64_t ow = begin; ow < end; ++ow) acc[ow] = LoadValue(x[first + ow * stride]);
    if (tap != nullptr) {
      for (int64_t ow = begin; ow < end; ++ow) tap[ow] = static_cast<int32_t>(first + ow * stride);
    }
  } else {
    std::fill(acc + begin, acc + end, Acc(0));
  }
  for (int64_t h = rows.begin; h < rows.end; ++h) {
    for (int64_t k = 0; k < g.kernel[1]; ++k) {
      // May be negative (the left pad); offset + ow * stride never is for interior columns.
      const int64_t offset = h * in_w + left + k;
      if (!max) {
        for (int64_t ow = begin; ow < end; ++ow) acc[ow] += LoadValue(x[offset + ow * stride]);
      } else if (tap == nullptr) {
        for (int64_t ow = begin; ow < end; ++ow) {
          const Acc value = LoadValue(x[offset + ow * stride]);
          const bool take = (value > acc[ow]) | (std::isnan(value) & !std::isnan(acc[ow]));
          acc[ow] = take ? value : acc[ow];
        }
      } else {
        for (int64_t ow = begin; ow < end; ++ow) {
          const Acc value = LoadValue(x[offset + ow * stride]);
          const bool take = (value > acc[ow]) | (std::isnan(value) & !std::isnan(acc[ow]));
          acc[ow] = take ? value : acc[ow];
          tap[ow] = take ? static_cast<int32_t>(offset + ow * stride) : tap[ow];
        }
      }
    }
  }
  if (!max) {
    const int64_t kernel_w = g.kernel[1];
    const int64_t taps = count_include_pad ? rows.padded * kernel_w : (rows.end - rows.begin) * kernel_w;
    const Acc divisor = static_cast<Acc>(taps);
    for (int64_t ow = begin; ow < end; ++ow) acc[ow] = acc[ow] / divisor;
  }
}

inline float TakeMax(float value, float result) { return Takes(value, result) ? value : result; }

__attribute__((target_clones("avx2", "default"))) void MaxOfPairs(const float* __restrict x, int64_t count,
                                                                   float* __restrict pairs) {
  for (int64_t i = 0; i < count; ++i) pairs[i] = TakeMax(x[2 * i + 1], x[2 * i]);
}

__attribute__((target_clones("avx2", "default"))) void MaxOfRowPairs(const float* __restrict pairs, int64_t rows,
                                                                     int64_t width, float* __restrict out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* top = pairs + 2 * r * width;
    const float* bottom = top + width;
    for (int64_t i = 0; i < width; ++i) out[r * width + i] = TakeMax(bottom[i], top[i]);
  }
}

#if defined(__x86_64__)
// The max of each (even, odd) column pair of 32 columns from `row` (lanes beyond
// `low`/`high` read as zeros).
__attribute__((target("avx512f"))) inline __m512 PairMax16(const float* row, __mmask16 low, __mmask16 high,
                                                          __m512i even, __m512i odd) {
  const __m512 a = _mm512_maskz_loadu_ps(low, row), b = _mm512_maskz_loadu_ps(high, row + 16);
  return TakeMax16(_mm512_permutex2var_ps(a, odd, b), _mm512_permutex2var_ps(a, even, b));
}

// One pass, 32 input columns of a row pair at a time, masked at a row's end: rows of
// the usual feature maps are 7 to 56 wide, too short for a compiler's vector loop.
// Each row's columns are split into even and odd lanes and maxed pairwise (left first),
// then the bottom row's pairs against the top's: the window order of TakeMax.
__attribute__((target("avx512f"))) void MaxPool2x2RowsAvx512(const float* in, int64_t out_rows, int64_t in_w,
                                                            float* out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t out_w = in_w / 2;
  for (int64_t r = 0; r < out_rows; ++r) {
    const float* top = in + 2 * r * in_w;
    const float* bottom = top + in_w;
    for (int64_t j = 0; j < in_w; j += 32) {
      const __mmask16 low = FirstLanes(in_w - j), high = FirstLanes(in_w - j - 16);
      const __m512 top_pairs = PairMax16(top + j, low, high, even, odd);
      const __m512 bottom_pairs = PairMax16(bottom + j, low, high, even, odd);
      _mm512_mask_storeu_ps(out + r * out_w + j / 2, FirstLanes(out_w - j / 2), TakeMax16(bottom_pairs, top_pairs));
    }
  }
}
#endif

// A 2x2 stride-2 max pool of `out_rows` output rows: input rows 2r and 2r + 1 (in_w
// wide) make output row r, so planes laid end to end pool as one run of rows. The max
// pool of CNNs (Tiles2x2) runs so as two long passes instead of one short pass per tap:
// the max of each horizontal pair over the whole plane, then of each vertical pair of
// those. Under PoolWindow's rule (NaN wins, the first of equal values kept) the pair
// maxima give the same bits as the four taps in row-major order.
void MaxPool2x2Rows(const float* in, int64_t out_rows, int64_t in_w, float* out) {
#if defined(__x86_64__)
  if (Pool2x2UsesAvx512()) return MaxPool2x2RowsAvx512(in, out_rows, in_w, out);
#endif
  const int64_t out_w = in_w / 2;
  std::vector<float> pairs(static_cast<size_t>(2 * out_rows * out_w));
  MaxOfPairs(in, 2 * out_rows * out_w, pairs.data());
  MaxOfRowPairs(pairs.data(), out_rows, out_w, out);
}

// dX of `out_rows` rows of 2x2 windows (as MaxPool2x2Rows lays them out): dY goes to
// the tap the forward pass picks, by the same pair maxima (which of each row's pair
// wins, then whether the bottom pair's winner beats the top's), and the other three
// taps get zeros; with `relu_slope`, dY times ReluSlope of the picked value.
__attribute__((target_clones("avx2", "default"))) void MaxPool2x2GradRowsPortable(const float* __restrict x,
                                                                                 const float* __restrict dy,
                                                                                 int64_t out_rows, int64_t in_w,
                                                                                 bool relu_slope,
                                                                                 float* __restrict dx) {
  const int64_t out_w = in_w / 2;
  for (int64_t r = 0; r < out_rows; ++r) {
    const float* top = x + 2 * r * in_w;
    const float* bottom = top + in_w;
    float* dx_top = dx + 2 * r * in_w;
    float* dx_bottom = dx_top + in_w;
    for (int64_t i = 0; i < out_w; ++i) {
      const float a = top[2 * i], b = top[2 * i + 1], c = bottom[2 * i], d = bottom[2 * i + 1];
      const bool right_top = Takes(b, a), right_bottom = Takes(d, c);
      const float top_max = right_top ? b : a, bottom_max = right_bottom ? d : c;
      const bool lower = Takes(bottom_max, top_max);
      const float g = relu_slope ? dy[r * out_w + i] * ReluSlope{}(lower ? bottom_max : top_max) : dy[r * out_w + i];
      dx_top[2 * i] = !lower && !right_top ? g : 0.0f;
      dx_top[2 * i + 1] = !lower && right_top ? g : 0.0f;
      dx_bottom[2 * i] = lower && !right_bottom ? g : 0.0f;
      dx_bottom[2 * i + 1] = lower && right_bottom ? g : 0.0f;
    }
  }
}

#if defined(__x86_64__)
// 32 columns of a dX row for 16 windows: g where `left` (even columns) or `right` (odd
// columns) holds, zeros elsewhere, interleaved back into column order.
__attribute__((target("avx512f"))) inline void StoreTaps16(__m512 g, __mmask16 left, __mmask16 right,
                                                          __mmask16 low, __mmask16 high, float* row) {
  const __m512i first_half = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second_half = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 even = _mm512_maskz_mov_ps(left, g), odd = _mm512_maskz_mov_ps(right, g);
  _mm512_mask_storeu_ps(row, low, _mm512_permutex2var_ps(even, first_half, odd));
  _mm512_mask_storeu_ps(row + 16, high, _mm512_permutex2var_ps(even, second_half, odd));
}

// MaxPool2x2RowsAvx512's choices, 16 windows at a time, with dY (times ReluSlope of the
// chosen value, with `relu_slope`) written back at the chosen tap and zeros at the others.
__attribute__((target("avx512f"))) void MaxPool2x2GradRowsAvx512(const float* x, const float* dy, int64_t out_rows,
                                                                int64_t in_w, bool relu_slope, float* dx) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t out_w = in_w / 2;
  for (int64_t r = 0; r < out_rows; ++r) {
    const float* top = x + 2 * r * in_w;
    const float* bottom = top + in_w;
    float* dx_top = dx + 2 * r * in_w;
    float* dx_bottom = dx_top + in_w;
    for (int64_t j = 0; j < in_w; j += 32) {
      const __mmask16 low = FirstLanes(in_w - j), high = FirstLanes(in_w - j - 16);
      const __m512 t0 = _mm512_maskz_loadu_ps(low, top + j), t1 = _mm512_maskz_loadu_ps(high, top + j + 16);
      const __m512 b0 = _mm512_maskz_loadu_ps(low, bottom + j), b1 = _mm512_maskz_loadu_ps(high, bottom + j + 16);
      const __m512 top_left = _mm512_permutex2var_ps(t0, even, t1), top_right = _mm512_permutex2var_ps(t0, odd, t1);
      const __m512 bottom_left = _mm512_permutex2var_ps(b0, even, b1);
      const __m512 bottom_right = _mm512_permutex2var_ps(b0, odd, b1);
      const __mmask16 right_top = Takes16(top_right, top_left), right_bottom = Takes16(bottom_right, bottom_left);
      const __m512 top_max = _mm512_mask_mov_ps(top_left, right_top, top_right);
      const __m512 bottom_max = _mm512_mask_mov_ps(bottom_left, right_bottom, bottom_right);
      const __mmask16 lower = Takes16(bottom_max, top_max);
      __m512 g = _mm512_maskz_loadu_ps(FirstLanes(out_w - j / 2), dy + r * out_w + j / 2);
      if (relu_slope) {
        // ReluSlope as a multiply by 1 or 0, so that g * 0 keeps its sign and NaN as ReluGrad's does.
        const __m512 chosen = _mm512_mask_mov_ps(top_max, lower, bottom_max);
        const __mmask16 positive = _mm512_cmp_ps_mask(chosen, _mm512_setzero_ps(), _CMP_GT_OQ);
        g = _mm512_mul_ps(g, _mm512_maskz_mov_ps(positive, _mm512_set1_ps(1.0f)));
      }
      StoreTaps16(g, static_cast<__mmask16>(~lower & ~right_top), static_cast<__mmask16>(~lower & right_top), low,
                  high, dx_top + j);
      StoreTaps16(g, static_cast<__mmask16>(lower & ~right_bottom), static_cast<__mmask16>(lower & right_bottom), low,
                  high, dx_bottom + j);
    }
  }
}
#endif

template <typename T>
void PoolPlanes(const T* in, T* out, const WindowGeometry& g, const PlaneWindows& p, bool max, bool count_include_pad,
                int64_t begin, int64_t end) {
  const int64_t in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  if constexpr (std::is_same_v<T, float>) {
    if (max && Tiles2x2(g)) {
      MaxPool2x2Rows(in + begin * in_h * in_w, (end - begin) * out_h, in_w, out + begin * out_h * out_w);
      return;
    }
  }
  std::vector<ComputeType<T>> acc(static_cast<size_t>(out_w));
  for (int64_t plane = begin; plane < end; ++plane) {
    const T* x = in + plane * in_h * in_w;
    T* y = out + plane * out_h * out_w;
    for (int64_t oh = 0; oh < out_h; ++oh) {
      const TapRange& rows = p.rows[oh];
      const bool interior = rows.begin < rows.end;
      if (interior) PoolRowInterior(x, g, p, rows, max, count_include_pad, acc.data(), nullptr);
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const bool vectorised = interior && ow >= p.interior_begin && ow < p.interior_end;
        const ComputeType<T> value =
            vectorised ? acc[ow] : PoolWindow(x, in_w, rows, p.cols[ow], max, count_include_pad);
        y[oh * out_w + ow] = StoreValue<T>(value);
      }
    }
  }
}

}  // namespace

void MaxPool2dArgmax(const float* x, const WindowGeometry& g, const PlaneWindows& p, int64_t* argmax) {
  const int64_t in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  thread_local std::vector<float> acc;
  thread_local std::vector<int32_t> tap;
  acc.resize(static_cast<size_t>(out_w));
  tap.resize(static_cast<size_t>(out_w));
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const TapRange& rows = p.rows[oh];
    int64_t* row_argmax = argmax + oh * out_w;
    const bool interior = rows.begin < rows.end;
    if (interior) {
      PoolRowInterior(x, g, p, rows, true, false, acc.data(), tap.data());
      for (int64_t ow = p.interior_begin; ow < p.interior_end; ++ow) row_argmax[ow] = tap[ow];
    }
    for (int64_t ow = 0; ow < out_w; ++ow) {
      if (interior && ow >= p.interior_begin && ow < p.interior_end) continue;
      const TapRange& cols = p.cols[ow];
      int64_t best = -1;
      float best_value = 0.0f;
      for (int64_t h = rows.begin; h < rows.end; ++h) {
        for (int64_t w = cols.begin; w < cols.end; ++w) {
          const float value = x[h * in_w + w];
          if (best < 0 || value > best_value || (std::isnan(value) && !std::isnan(best_value))) {
            best = h * in_w + w;
            best_value = value;
          }
        }
      }
      row_argmax[ow] = best;
    }
  }
}

void MaxPool2x2GradPlane(const float* x, const float* dy, const WindowGeometry& g, bool relu_slope, float* dx) {
#if defined(__x86_64__)
  if (Pool2x2UsesAvx512()) return MaxPool2x2GradRowsAvx512(x, dy, g.out[0], g.in[1], relu_slope, dx);
#endif
  MaxPool2x2GradRowsPortable(x, dy, g.out[0], g.in[1], relu_slope, dx);
}

namespace {

// One output row of a channels-last max pool: for each output column, -inf, then every
// tap in row-major order, the rule running across a tap's contiguous channels (so it
// vectorises); that gives PoolWindow's first-tap start bit for bit, and -inf for a
// window with no tap inside. `x` holds the image's input rows [rows.begin, rows.end) of
// output row `oh`, each [W, C]; `acc` takes [out_w, C].
__attribute__((target_clones("avx512f", "avx2", "default"))) void MaxPoolRowChannelsLast(
    const float* __restrict x, const WindowGeometry& g, const PlaneWindows& p, int64_t oh, int64_t channels,
    float* __restrict acc) {
  const TapRange& rows = p.rows[oh];
  const int64_t in_w = g.in[1];
  for (int64_t ow = 0; ow < g.out[1]; ++ow) {
    float* out = acc + ow * channels;
    for (int64_t c = 0; c < channels; ++c) out[c] = -std::numeric_limits<float>::infinity();
    const TapRange& cols = p.cols[ow];
    for (int64_t h = rows.begin; h < rows.end; ++h) {
      for (int64_t w = cols.begin; w < cols.end; ++w) {
        const float* tap = x + ((h - rows.begin) * in_w + w) * channels;
        for (int64_t c = 0; c < channels; ++c) out[c] = TakeMax(tap[c], out[c]);
      }
    }
  }
}

#if defined(__x86_64__)
// One tap of 16 channels, through ReluOp when kRelu: a negative value becomes +0, NaN and
// -0 stay (an ordered less-than is false for both).
template <bool kRelu>
__attribute__((target("avx512f"))) inline __m512 LoadTap16(__mmask16 lanes, const float* values) {
  const __m512 tap = _mm512_maskz_loadu_ps(lanes, values);
  if constexpr (!kRelu) return tap;
  const __m512 zero = _mm512_setzero_ps();
  return _mm512_mask_mov_ps(tap, _mm512_cmp_ps_mask(tap, zero, _CMP_LT_OQ), zero);
}

// MaxPoolRowChannelsLast for windows that Tiles2x2, on AVX-512: the four taps of each
// output are two adjacent channel vectors in each of two rows, taken in PoolWindow's
// order, 16 channels at a time.
template <bool kRelu>
__attribute__((target("avx512f"))) void MaxPool2x2RowChannelsLastAvx512(const float* top, const float* bottom,
                                                                       int64_t out_w, int64_t channels, float* acc) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const float* t = top + 2 * ow * channels;
    const float* b = bottom + 2 * ow * channels;
    for (int64_t c = 0; c < channels; c += 16) {
      const __mmask16 lanes = FirstLanes(channels - c);
      __m512 max = LoadTap16<kRelu>(lanes, t + c);
      max = TakeMax16(LoadTap16<kRelu>(lanes, t + channels + c), max);
      max = TakeMax16(LoadTap16<kRelu>(lanes, b + c), max);
      max = TakeMax16(LoadTap16<kRelu>(lanes, b + channels + c), max);
      _mm512_mask_storeu_ps(acc + ow * channels + c, lanes, max);
    }
  }
}

// The same on float16/bfloat16 rows, in whole blocks of 16 channels: the taps widened as
// they are loaded, the max stored back exactly, as the float32 pool between widening and
// storing whole rows computes it.
template <DType kDtype>
__attribute__((target("avx512f"))) void MaxPool2x2RowChannelsLastLowAvx512(const uint16_t* top, const uint16_t* bottom,
                                                                          int64_t out_w, int64_t channels,
                                                                          uint16_t* out) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = 0; c < channels; c += 16) {
      __m512 max = Widen16<kDtype>(top, left + c);
      max = TakeMax16(Widen16<kDtype>(top, right + c), max);
      max = TakeMax16(Widen16<kDtype>(bottom, left + c), max);
      max = TakeMax16(Widen16<kDtype>(bottom, right + c), max);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + ow * channels + c), NarrowExact16<kDtype>(max));
    }
  }
}

// The AVX-512 kernels' work on AVX2, 8 channels at a time (whole blocks of 8 only): a tap
// through ReluOp when kRelu, as LoadTap16.
template <bool kRelu>
__attribute__((target("avx2"))) inline __m256 LoadTap8(const float* values) {
  const __m256 tap = _mm256_loadu_ps(values);
  if constexpr (!kRelu) return tap;
  const __m256 zero = _mm256_setzero_ps();
  return _mm256_blendv_ps(tap, zero, _mm256_cmp_ps(tap, zero, _CMP_LT_OQ));
}

template <bool kRelu>
__attribute__((target("avx2"))) void MaxPool2x2RowChannelsLastAvx2(const float* top, const float* bottom,
                                                                  int64_t out_w, int64_t channels, float* acc) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const float* t = top + 2 * ow * channels;
    const float* b = bottom + 2 * ow * channels;
    for (int64_t c = 0; c < channels; c += 8) {
      __m256 max = LoadTap8<kRelu>(t + c);
      max = TakeMax8(LoadTap8<kRelu>(t + channels + c), max);
      max = TakeMax8(LoadTap8<kRelu>(b + c), max);
      max = TakeMax8(LoadTap8<kRelu>(b + channels + c), max);
      _mm256_storeu_ps(acc + ow * channels + c, max);
    }
  }
}

// 8 widened float16/bfloat16 values back exactly, as NarrowExact16 (a NaN quieted).
template <DType kDtype>
__attribute__((target("avx2,f16c"))) inline __m128i NarrowExact8(__m256 values) {
  if constexpr (kDtype == DType::kFloat16) {
    return _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT);
  } else {
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(values, values, _CMP_UNORD_Q));
    const __m256i bits = _mm256_or_si256(_mm256_castps_si256(values), _mm256_and_si256(nan, _mm256_set1_epi32(0x400000)));
    const __m256i high = _mm256_srli_epi32(bits, 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
  }
}

template <DType kDtype>
__attribute__((target("avx2,f16c"))) void MaxPool2x2RowChannelsLastLowAvx2(const uint16_t* top,
                                                                        const uint16_t* bottom, int64_t out_w,
                                                                        int64_t channels, uint16_t* out) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = 0; c < channels; c += 8) {
      __m256 max = Avx2Floats::Widen<kDtype>(top, left + c);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(top, right + c), max);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(bottom, left + c), max);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(bottom, right + c), max);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + ow * channels + c), NarrowExact8<kDtype>(max));
    }
  }
}

// MaxPool2dChannelsLast of float16/bfloat16 X in 2x2 tiles of whole 8-channel blocks
// into channels-last Y on AVX2, read and written in place one output row at a time.
void MaxPool2x2ChannelsLastLowAvx2(ThreadPool& threads, const Tensor& x, const WindowGeometry& g, int64_t grain,
                                   Tensor& y) {
  const int64_t channels = x.dim(1), out_h = g.out[0], out_w = g.out[1];
  const int64_t row_size = g.in[1] * channels, out_row_size = out_w * channels;
  const auto kernel = x.dtype() == DType::kFloat16 ? MaxPool2x2RowChannelsLastLowAvx2<DType::kFloat16>
                                                   : MaxPool2x2RowChannelsLastLowAvx2<DType::kBFloat16>;
  const uint16_t* x_bits = static_cast<const uint16_t*>(x.raw_data());
  uint16_t* y_bits = static_cast<uint16_t*>(y.raw_data());
  threads.ParallelFor(x.dim(0) * out_h, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const uint16_t* top = x_bits + (row / out_h * g.in[0] + 2 * (row % out_h)) * row_size;
      kernel(top, top + row_size, out_w, channels, y_bits + row * out_row_size);
    }
  });
}

// MaxPool2dChannelsLast of float16/bfloat16 X in 2x2 tiles of whole 16-channel blocks,
// read in place by MaxPool2x2RowChannelsLastLowAvx512 one output row at a time; the
// pooled bits go to Y as they are (channels-last) or, transposed 16 channels at a time,
// to each channel's row (NCHW).
void MaxPool2x2ChannelsLastLowAvx512(ThreadPool& threads, const Tensor& x, const WindowGeometry& g,
                                     bool y_channels_last, int64_t grain, Tensor& y) {
  const int64_t channels = x.dim(1), out_h = g.out[0], out_w = g.out[1];
  const int64_t row_size = g.in[1] * channels, out_row_size = out_w * channels;
  const auto kernel = x.dtype() == DType::kFloat16 ? MaxPool2x2RowChannelsLastLowAvx512<DType::kFloat16>
                                                   : MaxPool2x2RowChannelsLastLowAvx512<DType::kBFloat16>;
  const uint16_t* x_bits = static_cast<const uint16_t*>(x.raw_data());
  uint16_t* y_bits = static_cast<uint16_t*>(y.raw_data());
  threads.ParallelFor(x.dim(0) * out_h, grain, [&](int64_t begin, int64_t end) {
    std::vector<uint16_t> pooled(y_channels_last ? 0 : static_cast<size_t>(out_row_size));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t image = row / out_h, oh = row % out_h;
      const uint16_t* top = x_bits + (image * g.in[0] + 2 * oh) * row_size;
      uint16_t* out = y_channels_last ? y_bits + row * out_row_size : pooled.data();
      kernel(top, top + row_size, out_w, channels, out);
      if (y_channels_last) continue;
      for (int64_t c = 0; c < channels; c += 16) {
        dnn::PixelsToRows16Bits(out + c, channels, out_w, y_bits + ((image * channels + c) * out_h + oh) * out_w,
                                out_h * out_w);
      }
    }
  });
}
#endif

// How a channels-last max pool's 2x2 tiles run: on the AVX-512 kernels, the AVX2 ones
// (whole blocks of 8 channels), or the general walk.
enum class TileKernels { kNone, kAvx2, kAvx512 };

// One output row of a channels-last max pool into acc: the tile kernels of `tiles`, their
// taps read through ReluOp when `relu`; the general walk otherwise (its rows then come
// through ReluOp already: MaxPool2dChannelsLast).
void MaxPoolRowChannelsLastOf(TileKernels tiles, const float* x, const WindowGeometry& g, const PlaneWindows& p,
                              int64_t oh, int64_t channels, bool relu, float* acc) {
#if defined(__x86_64__)
  if (tiles == TileKernels::kAvx512) {
    const auto kernel = relu ? MaxPool2x2RowChannelsLastAvx512<true> : MaxPool2x2RowChannelsLastAvx512<false>;
    return kernel(x, x + g.in[1] * channels, g.out[1], channels, acc);
  }
  if (tiles == TileKernels::kAvx2) {
    const auto kernel = relu ? MaxPool2x2RowChannelsLastAvx2<true> : MaxPool2x2RowChannelsLastAvx2<false>;
    return kernel(x, x + g.in[1] * channels, g.out[1], channels, acc);
  }
#endif
  MaxPoolRowChannelsLast(x, g, p, oh, channels, acc);
}

}  // namespace

Status MaxPool2dChannelsLast(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool y_channels_last,
                             Tensor& y) {
  if (x.dtype() != DType::kFloat32 && !IsLowPrecision(x.dtype())) return context.UnsupportedDType(x.dtype());
  const PlaneWindows p = ResolveWindows(g);
  const int64_t channels = x.dim(1), in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  const int64_t row_size = in_w * channels, out_row_size = out_w * channels;
  const bool wide = x.dtype() == DType::kFloat32;
  // A Relu the plan moved here from the Conv before (plan_fusion.h), on float32 X only.
  const bool relu = context.relu_of_input();
  if (relu && !wide) return context.Error(ErrorCode::kInternal, "a Relu moved into the pool needs float32 X");
  TileKernels tiles = TileKernels::kNone;
#if defined(__x86_64__)
  if (Tiles2x2(g) && Pool2x2UsesAvx512()) tiles = TileKernels::kAvx512;
  else if (Tiles2x2(g) && channels % 8 == 0 && PoolsRunAvx2()) tiles = TileKernels::kAvx2;
  const bool transposes = wide && !y_channels_last && channels % 16 == 0 && dnn::TransposesSupported();
#endif
  const int64_t grain = ItemsPerChunk(out_row_size, kOutputsPerChunk);
#if defined(__x86_64__)
  if (tiles == TileKernels::kAvx512 && IsLowPrecision(x.dtype()) && channels % 16 == 0) {
    MaxPool2x2ChannelsLastLowAvx512(context.threads(), x, g, y_channels_last, grain, y);
    return Status::Ok();
  }
  if (tiles == TileKernels::kAvx2 && IsLowPrecision(x.dtype()) && y_channels_last) {
    MaxPool2x2ChannelsLastLowAvx2(context.threads(), x, g, grain, y);
    return Status::Ok();
  }
#endif
  // The general walk reads float16/bfloat16 rows widened, and float32 rows through a moved
  // Relu, from a buffer (in cache, a pass of the window's rows); a test of the Relu per tap
  // inside its loop made the ResNet-18 stem's pool 30x slower.
  const bool buffered = !wide || (relu && tiles == TileKernels::kNone);
  context.threads().ParallelFor(x.dim(0) * out_h, grain, [&](int64_t begin, int64_t end) {
    // float16/bfloat16 rows are widened exactly; the max is one of them, so storing it
    // back rounds nothing.
    std::vector<float> widened(buffered ? static_cast<size_t>(g.kernel[0] * row_size) : 0);
    std::vector<float> pooled(wide && y_channels_last ? 0 : static_cast<size_t>(out_row_size));
    std::vector<float> channel_row(y_channels_last || wide ? 0 : static_cast<size_t>(out_w));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t image = row / out_h, oh = row % out_h;
      const TapRange& rows = p.rows[oh];
      const int64_t first = (image * in_h + rows.begin) * row_size;
      const int64_t count = (rows.end - rows.begin) * row_size;
      const float* x_rows = buffered ? widened.data() : x.data<float>() + first;
      if (!wide) LoadFloat32Block(x, first, count, widened.data());
      if (wide && buffered) ReluFloat32(x.data<float>() + first, widened.data(), count);
      float* acc = pooled.empty() ? y.data<float>() + row * out_row_size : pooled.data();
      MaxPoolRowChannelsLastOf(tiles, x_rows, g, p, oh, channels, relu && !buffered, acc);
      if (y_channels_last) {
        if (!wide) StoreFloat32Block(acc, row * out_row_size, out_row_size, y);
        continue;
      }
      // An NCHW Y: each channel's row of outputs gathered, then stored; float32 ones
      // straight into Y, 16 channels at a time by a register transpose where the CPU has
      // one (element by element, the gather cost as much as the pool).
#if defined(__x86_64__)
      if (transposes) {
        for (int64_t c = 0; c < channels; c += 16) {
          dnn::PixelsToRows16(acc + c, channels, out_w,
                              y.data<float>() + ((image * channels + c) * out_h + oh) * out_w, out_h * out_w);
        }
        continue;
      }
#endif
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t at = ((image * channels + c) * out_h + oh) * out_w;
        float* gathered = wide ? y.data<float>() + at : channel_row.data();
        for (int64_t ow = 0; ow < out_w; ++ow) gathered[ow] = acc[ow * channels + c];
        if (!wide) StoreFloat32Block(gathered, at, out_w, y);
      }
    }
  });
  return Status::Ok();
}

bool Pool2dApplies(const WindowGeometry& g) { return g.rank() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1; }

Status Pool2d(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool max, bool count_include_pad,
              Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t grain = ItemsPerChunk(g.out[0] * g.out[1], kOutputsPerChunk);
  const PlaneWindows windows = ResolveWindows(g);
  if (IsLowPrecision(x.dtype())) {
    // Widened and rounded a plane at a time (vectorised conversions); the float32 pool
    // in between computes exactly what the per-element conversions would.
    const int64_t in_size = g.in[0] * g.in[1], out_size = g.out[0] * g.out[1];
    context.threads().ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      Float32BlockReader reader(x, in_size);
      std::vector<float> pooled(static_cast<size_t>(out_size));
      for (int64_t plane = begin; plane < end; ++plane) {
        PoolPlanes(reader.Read(plane * in_size), pooled.data(), g, windows, max, count_include_pad, 0, 1);
        StoreFloat32Block(pooled.data(), plane * out_size, out_size, y);
      }
    });
    return Status::Ok();
  }
  return DispatchFloat(context, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    context.threads().ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      PoolPlanes(in, out, g, windows, max, count_include_pad, begin, end);
    });
    return Status::Ok();
  });
}

}  // namespace onnx_amp
