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

#include "ops/common/widen_avx512.h"  // for its pragmas: GCC 12's false intrinsics warnings
#endif

#include "ops/common/elementwise_math.h"
#include "ops/common/float_vec_isa.h"
#include "ops/common/float_compute.h"
#include "ops/conv/max_pool_rule.h"
#include "runtime/core/cpu_isa_cap.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

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

bool Pool2dApplies(const WindowGeometry& g) { return g.rank() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1; }

Status Pool2d(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool max, bool count_include_pad,
              Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t grain = ItemsPerChunk(g.out[0] * g.out[1], kPoolOutputsPerChunk);
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
