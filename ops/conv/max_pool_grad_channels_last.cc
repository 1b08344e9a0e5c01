// MaxPoolGrad on channels-last X and dX (pool_2d.h): per image, each window's taps are
// searched across a pixel's contiguous channels with the forward max's rule, and dY
// goes to the tap it picks, as the NCHW kernels route it.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#if defined(__x86_64__)
#include "ops/common/widen_avx512.h"
#endif
#include "ops/conv/pool_2d.h"
#include "ops/conv/max_pool_rule.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Image `n` of dY as float32 in channels-last order: in place or widened when dY is
// channels-last, else gathered from its NCHW planes into `buffer`.
const float* ChannelsLastImage(const Tensor& dy, bool channels_last, int64_t n, int64_t channels, int64_t pixels,
                               std::vector<float>& planes, float* buffer) {
  const int64_t size = channels * pixels;
  if (channels_last) return Float32BlockOf(dy, n * size, size, buffer);
  const float* nchw = Float32BlockOf(dy, n * size, size, planes.data());
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t p = 0; p < pixels; ++p) buffer[p * channels + c] = nchw[c * pixels + p];
  }
  return buffer;
}

// dX of one output row of 2x2 windows at stride 2 (Tiles2x2) from the two input rows
// `top` and `bottom` (in_w pixels of C channels each): dY goes to the tap the forward
// max picks, by the NCHW tile kernel's pair maxima (which of each row's pair wins, then
// whether the bottom pair's winner beats the top's: the first maximum in row-major
// order), times the Relu's slope there with `relu_slope`; the other taps get zeros.
// Channels from `first_channel` on (the ones an AVX2 loop left).
void MaxPool2x2GradRowPortable(const float* __restrict top, const float* __restrict bottom,
                               const float* __restrict dy, int64_t out_w, int64_t channels, bool relu_slope,
                               float* __restrict dx_top, float* __restrict dx_bottom, int64_t first_channel = 0) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = first_channel; c < channels; ++c) {
      const float a = top[left + c], b = top[right + c], d0 = bottom[left + c], d1 = bottom[right + c];
      const bool right_top = Takes(b, a), right_bottom = Takes(d1, d0);
      const float top_max = right_top ? b : a, bottom_max = right_bottom ? d1 : d0;
      const bool lower = Takes(bottom_max, top_max);
      const float g = dy[ow * channels + c];
      const float routed = relu_slope ? g * ReluSlope{}(lower ? bottom_max : top_max) : g;
      dx_top[left + c] = !lower && !right_top ? routed : 0.0f;
      dx_top[right + c] = !lower && right_top ? routed : 0.0f;
      dx_bottom[left + c] = lower && !right_bottom ? routed : 0.0f;
      dx_bottom[right + c] = lower && right_bottom ? routed : 0.0f;
    }
  }
}

#if defined(__x86_64__)
// The same, 16 channels at a time (the compiler leaves the portable loop scalar), on top,
// bottom and dy of `kDtype` widened as they are loaded (float16/bfloat16 ones only with
// whole blocks of 16 channels); dX is float32.
template <DType kDtype>
__attribute__((target("avx512f"))) void MaxPool2x2GradRowAvx512(const void* top, const void* bottom, const void* dy,
                                                               int64_t out_w, int64_t channels, bool relu_slope,
                                                               float* dx_top, float* dx_bottom) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = 0; c < channels; c += 16) {
      const __mmask16 m = FirstLanes(channels - c);
      __m512 a, b, d0, d1, g;
      if constexpr (kDtype == DType::kFloat32) {
        const auto* t = static_cast<const float*>(top);
        const auto* u = static_cast<const float*>(bottom);
        a = _mm512_maskz_loadu_ps(m, t + left + c);
        b = _mm512_maskz_loadu_ps(m, t + right + c);
        d0 = _mm512_maskz_loadu_ps(m, u + left + c);
        d1 = _mm512_maskz_loadu_ps(m, u + right + c);
        g = _mm512_maskz_loadu_ps(m, static_cast<const float*>(dy) + ow * channels + c);
      } else {
        a = Widen16<kDtype>(top, left + c);
        b = Widen16<kDtype>(top, right + c);
        d0 = Widen16<kDtype>(bottom, left + c);
        d1 = Widen16<kDtype>(bottom, right + c);
        g = Widen16<kDtype>(dy, ow * channels + c);
      }
      const __mmask16 right_top = Takes16(b, a), right_bottom = Takes16(d1, d0);
      const __m512 top_max = _mm512_mask_mov_ps(a, right_top, b), bottom_max = _mm512_mask_mov_ps(d0, right_bottom, d1);
      const __mmask16 lower = Takes16(bottom_max, top_max);
      if (relu_slope) {
        // ReluSlope as a multiply by 1 or 0, so that g * 0 keeps its sign and NaN as ReluGrad's does.
        const __m512 chosen = _mm512_mask_mov_ps(top_max, lower, bottom_max);
        const __mmask16 positive = _mm512_cmp_ps_mask(chosen, _mm512_setzero_ps(), _CMP_GT_OQ);
        g = _mm512_mul_ps(g, _mm512_maskz_mov_ps(positive, _mm512_set1_ps(1.0f)));
      }
      _mm512_mask_storeu_ps(dx_top + left + c, m, _mm512_maskz_mov_ps(~lower & ~right_top, g));
      _mm512_mask_storeu_ps(dx_top + right + c, m, _mm512_maskz_mov_ps(~lower & right_top, g));
      _mm512_mask_storeu_ps(dx_bottom + left + c, m, _mm512_maskz_mov_ps(lower & ~right_bottom, g));
      _mm512_mask_storeu_ps(dx_bottom + right + c, m, _mm512_maskz_mov_ps(lower & right_bottom, g));
    }
  }
}

// dX of image n, tiled, from float16/bfloat16 X and channels-last dY of one dtype, read
// in place: each output row's two dX rows are made in float32 in `rows` (2 * in_w * C
// values, in L1) and rounded into dX, or written straight into a float32 dX.
void MaxPool2x2GradImageLowAvx512(const Tensor& x, const Tensor& dy, int64_t n, const WindowGeometry& g,
                                  bool relu_slope, float* rows, Tensor& dx) {
  const int64_t channels = x.dim(1), in_w = g.in[1], out_w = g.out[1];
  const int64_t row = in_w * channels, in_size = g.in[0] * row, out_size = g.out[0] * out_w * channels;
  const size_t element = DTypeSize(x.dtype());
  const char* xs = static_cast<const char*>(x.raw_data()) + n * in_size * element;
  const char* gs = static_cast<const char*>(dy.raw_data()) + n * out_size * element;
  const auto kernel = x.dtype() == DType::kFloat16 ? MaxPool2x2GradRowAvx512<DType::kFloat16>
                                                   : MaxPool2x2GradRowAvx512<DType::kBFloat16>;
  for (int64_t oh = 0; oh < g.out[0]; ++oh) {
    const int64_t offset = n * in_size + 2 * oh * row;  // of the two dX rows
    float* out = dx.dtype() == DType::kFloat32 ? dx.data<float>() + offset : rows;
    kernel(xs + 2 * oh * row * element, xs + (2 * oh + 1) * row * element, gs + oh * out_w * channels * element, out_w,
           channels, relu_slope, out, out + row);
    if (out == rows) StoreFloat32Block(rows, offset, 2 * row, dx);
  }
}

// The AVX-512 row kernel's work 8 channels at a time on float32 (the compiler leaves the
// portable loop scalar: 8x slower on the bundled CNN's pools), the last channels short of
// 8 on the portable loop. A lane a mask clears is +0, as the masked moves leave it.
__attribute__((target("avx2"))) void MaxPool2x2GradRowAvx2(const float* top, const float* bottom, const float* dy,
                                                         int64_t out_w, int64_t channels, bool relu_slope,
                                                         float* dx_top, float* dx_bottom) {
  const int64_t vector_channels = channels / 8 * 8;
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = 0; c < vector_channels; c += 8) {
      const __m256 a = _mm256_loadu_ps(top + left + c), b = _mm256_loadu_ps(top + right + c);
      const __m256 d0 = _mm256_loadu_ps(bottom + left + c), d1 = _mm256_loadu_ps(bottom + right + c);
      __m256 g = _mm256_loadu_ps(dy + ow * channels + c);
      const __m256 right_top = Takes8(b, a), right_bottom = Takes8(d1, d0);
      const __m256 top_max = _mm256_blendv_ps(a, b, right_top), bottom_max = _mm256_blendv_ps(d0, d1, right_bottom);
      const __m256 lower = Takes8(bottom_max, top_max);
      if (relu_slope) {
        // ReluSlope as a multiply by 1 or 0, so that g * 0 keeps its sign and NaN as ReluGrad's does.
        const __m256 chosen = _mm256_blendv_ps(top_max, bottom_max, lower);
        const __m256 positive = _mm256_cmp_ps(chosen, _mm256_setzero_ps(), _CMP_GT_OQ);
        g = _mm256_mul_ps(g, _mm256_and_ps(positive, _mm256_set1_ps(1.0f)));
      }
      _mm256_storeu_ps(dx_top + left + c, _mm256_andnot_ps(_mm256_or_ps(lower, right_top), g));
      _mm256_storeu_ps(dx_top + right + c, _mm256_andnot_ps(lower, _mm256_and_ps(right_top, g)));
      _mm256_storeu_ps(dx_bottom + left + c, _mm256_and_ps(lower, _mm256_andnot_ps(right_bottom, g)));
      _mm256_storeu_ps(dx_bottom + right + c, _mm256_and_ps(lower, _mm256_and_ps(right_bottom, g)));
    }
  }
  if (vector_channels < channels) {
    MaxPool2x2GradRowPortable(top, bottom, dy, out_w, channels, relu_slope, dx_top, dx_bottom, vector_channels);
  }
}
#endif

void MaxPool2x2GradRow(const float* top, const float* bottom, const float* dy, int64_t out_w, int64_t channels,
                       bool relu_slope, float* dx_top, float* dx_bottom) {
#if defined(__x86_64__)
  if (Pool2x2UsesAvx512()) {
    return MaxPool2x2GradRowAvx512<DType::kFloat32>(top, bottom, dy, out_w, channels, relu_slope, dx_top, dx_bottom);
  }
  if (PoolsRunAvx2()) return MaxPool2x2GradRowAvx2(top, bottom, dy, out_w, channels, relu_slope, dx_top, dx_bottom);
#endif
  MaxPool2x2GradRowPortable(top, bottom, dy, out_w, channels, relu_slope, dx_top, dx_bottom);
}

}  // namespace

Status MaxPoolGradChannelsLast(KernelContext& context, const Tensor& dy, bool dy_channels_last, const Tensor& x,
                               const WindowGeometry& g, bool relu_slope, Tensor& dx) {
  if (!Pool2dApplies(g) || x.rank() != 4) {
    return context.Error(ErrorCode::kInternal, "channels-last MaxPoolGrad takes 2-D windows without dilation only");
  }
  const int64_t batch = x.dim(0), channels = x.dim(1), in_w = g.in[1], out_w = g.out[1];
  const int64_t in_pixels = g.in[0] * in_w, out_pixels = g.out[0] * out_w;
  const int64_t in_size = in_pixels * channels, out_size = out_pixels * channels;
  const PlaneWindows windows = ResolveWindows(g);
  // Tiling 2x2 windows run on a kernel of their own, the NCHW tile kernel's bits (dY
  // written, not added, at its tap: signed zeros included).
  const bool tiles = Tiles2x2(g);
  const bool float32_dx = dx.dtype() == DType::kFloat32;
  // Chunks of at least ~16K elements: waking a thread for less costs more than it saves.
  const int64_t grain = ItemsPerChunk(in_size, int64_t{1} << 14);
#if defined(__x86_64__)
  // Low-precision X and dY read in place by the AVX-512 tile kernel, without widened
  // copies of each image.
  if (tiles && Pool2x2UsesAvx512() && x.dtype() != DType::kFloat32 && dy.dtype() == x.dtype() && dy_channels_last &&
      channels % 16 == 0) {
    context.threads().ParallelFor(batch, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> rows(static_cast<size_t>(2 * in_w * channels));
      for (int64_t n = begin; n < end; ++n) MaxPool2x2GradImageLowAvx512(x, dy, n, g, relu_slope, rows.data(), dx);
    });
    return Status::Ok();
  }
#endif
  context.threads().ParallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> x_buffer(static_cast<size_t>(x.dtype() == DType::kFloat32 ? 0 : in_size));
    std::vector<float> dy_planes(static_cast<size_t>(dy_channels_last || dy.dtype() == DType::kFloat32 ? 0 : out_size));
    std::vector<float> dy_buffer(static_cast<size_t>(out_size)), dx_buffer(static_cast<size_t>(float32_dx ? 0 : in_size));
    std::vector<float> best_value(static_cast<size_t>(channels));
    std::vector<int64_t> best_tap(static_cast<size_t>(channels));
    for (int64_t n = begin; n < end; ++n) {
      const float* xs = Float32BlockOf(x, n * in_size, in_size, x_buffer.data());
      const float* gs = ChannelsLastImage(dy, dy_channels_last, n, channels, out_pixels, dy_planes, dy_buffer.data());
      float* out = float32_dx ? dx.data<float>() + n * in_size : dx_buffer.data();
      if (tiles) {
        const int64_t row = in_w * channels;
        for (int64_t oh = 0; oh < g.out[0]; ++oh) {
          MaxPool2x2GradRow(xs + 2 * oh * row, xs + (2 * oh + 1) * row, gs + oh * out_w * channels, out_w, channels,
                            relu_slope, out + 2 * oh * row, out + (2 * oh + 1) * row);
        }
        if (!float32_dx) StoreFloat32Block(out, n * in_size, in_size, dx);
        continue;
      }
      std::fill_n(out, in_size, 0.0f);
      for (int64_t o = 0; o < out_pixels; ++o) {
        const TapRange& rows = windows.rows[o / out_w];
        const TapRange& cols = windows.cols[o % out_w];
        if (rows.begin >= rows.end || cols.begin >= cols.end) continue;
        const int64_t first = rows.begin * in_w + cols.begin;
        for (int64_t c = 0; c < channels; ++c) {
          best_value[c] = xs[first * channels + c];
          best_tap[c] = first;
        }
        for (int64_t ih = rows.begin; ih < rows.end; ++ih) {
          for (int64_t iw = ih == rows.begin ? cols.begin + 1 : cols.begin; iw < cols.end; ++iw) {
            const int64_t tap = ih * in_w + iw;
            const float* values = xs + tap * channels;
            for (int64_t c = 0; c < channels; ++c) {
              const bool takes = Takes(values[c], best_value[c]);
              best_value[c] = takes ? values[c] : best_value[c];
              best_tap[c] = takes ? tap : best_tap[c];
            }
          }
        }
        const float* g_row = gs + o * channels;
        for (int64_t c = 0; c < channels; ++c) out[best_tap[c] * channels + c] += g_row[c];
      }
      if (relu_slope) {
        // As a ReluGrad reading the NCHW kernel's dX: rounded to its dtype first.
        if (!float32_dx) RoundThrough(dx.dtype(), out, out, in_size);
        const ReluSlope slope;
        for (int64_t i = 0; i < in_size; ++i) out[i] *= slope(xs[i]);
      }
      if (!float32_dx) StoreFloat32Block(out, n * in_size, in_size, dx);
    }
  });
  return Status::Ok();
}

}  // namespace onnx_amp
