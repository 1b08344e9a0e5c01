// MaxPool2dChannelsLast (pool_2d.h): the max of channels-last X's windows, the rule
// running across a tap's contiguous channels, on kernels of their own for the 2x2 tiles
// of CNNs (AVX-512, AVX2) and a general walk for the rest.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#include "ops/common/float_vec_avx2.h"
#endif

#include "ops/common/converting_relayout.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/relu_bits.h"
#include "ops/conv/max_pool_rule.h"
#include "ops/conv/pool_2d.h"
#include "runtime/core/convert.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
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

// The AVX-512 kernels' work on AVX2, 8 channels at a time (whole blocks of 8 only; as
// PoolsRunAvx2 holds, the CPU has the FMA and F16C of Avx2Floats' target): a tap through
// ReluOp when kRelu, as LoadTap16.
template <bool kRelu>
ONNX_AMP_AVX2_FLOATS inline __m256 LoadTap8(const float* values) {
  const __m256 tap = _mm256_loadu_ps(values);
  if constexpr (!kRelu) return tap;
  return Avx2Floats::Relu(tap);
}

template <bool kRelu>
ONNX_AMP_AVX2_FLOATS void MaxPool2x2RowChannelsLastAvx2(const float* top, const float* bottom, int64_t out_w,
                                                        int64_t channels, float* acc) {
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

// The same on float16/bfloat16 rows, 8 channels at a time.
template <DType kDtype>
ONNX_AMP_AVX2_FLOATS void MaxPool2x2RowChannelsLastLowAvx2(const uint16_t* top, const uint16_t* bottom,
                                                           int64_t out_w, int64_t channels, uint16_t* out) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t left = 2 * ow * channels, right = left + channels;
    for (int64_t c = 0; c < channels; c += 8) {
      __m256 max = Avx2Floats::Widen<kDtype>(top, left + c);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(top, right + c), max);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(bottom, left + c), max);
      max = TakeMax8(Avx2Floats::Widen<kDtype>(bottom, right + c), max);
      Avx2Floats::StoreExact<kDtype>(out, ow * channels + c, max);
    }
  }
}

// MaxPool2dChannelsLast of float16/bfloat16 X in 2x2 tiles of whole blocks of channels (16
// on AVX-512, 8 on AVX2), read in place one output row at a time by the row kernels above;
// the pooled bits go to Y as they are (channels-last) or to each channel's row (NCHW):
// transposed 16 channels at a time on AVX-512, moved one by one on AVX2. Nothing is
// converted.
void MaxPool2x2ChannelsLastLow(ThreadPool& threads, const Tensor& x, const WindowGeometry& g, bool avx512,
                               bool y_channels_last, int64_t grain, Tensor& y) {
  const int64_t channels = x.dim(1), out_h = g.out[0], out_w = g.out[1];
  const int64_t row_size = g.in[1] * channels, out_row_size = out_w * channels;
  const bool half = x.dtype() == DType::kFloat16;
  const auto kernel = avx512 ? (half ? MaxPool2x2RowChannelsLastLowAvx512<DType::kFloat16>
                                     : MaxPool2x2RowChannelsLastLowAvx512<DType::kBFloat16>)
                             : (half ? MaxPool2x2RowChannelsLastLowAvx2<DType::kFloat16>
                                     : MaxPool2x2RowChannelsLastLowAvx2<DType::kBFloat16>);
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
      uint16_t* rows = y_bits + (image * channels * out_h + oh) * out_w;  // channel 0's row
      if (avx512) {
        for (int64_t c = 0; c < channels; c += 16) {
          dnn::PixelsToRows16Bits(out + c, channels, out_w, rows + c * out_h * out_w, out_h * out_w);
        }
        continue;
      }
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t ow = 0; ow < out_w; ++ow) rows[c * out_h * out_w + ow] = out[ow * channels + c];
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

// MaxPool2x2RowChannelsLast's portable rule: each output -inf, then the four taps in
// PoolWindow's order, widened exactly and stored back exactly.
void MaxPool2x2RowPortable(DType dtype, const void* top, const void* bottom, int64_t out_w, int64_t channels,
                           void* out) {
  const int64_t row = 2 * out_w * channels;
  std::vector<float> widened(static_cast<size_t>(2 * row)), pooled(static_cast<size_t>(out_w * channels));
  const auto widen = [&](const void* from, float* to) {
    if (dtype == DType::kFloat32) std::copy_n(static_cast<const float*>(from), row, to);
    else if (dtype == DType::kFloat16) ConvertHalfToFloat(static_cast<const uint16_t*>(from), to, static_cast<size_t>(row));
    else ConvertBFloat16ToFloat(static_cast<const uint16_t*>(from), to, static_cast<size_t>(row));
  };
  widen(top, widened.data());
  widen(bottom, widened.data() + row);
  for (int64_t ow = 0; ow < out_w; ++ow) {
    for (int64_t c = 0; c < channels; ++c) {
      float max = -std::numeric_limits<float>::infinity();
      for (const int64_t tap : {int64_t{0}, channels, row, row + channels}) {
        max = TakeMax(widened[tap + 2 * ow * channels + c], max);
      }
      pooled[ow * channels + c] = max;
    }
  }
  const size_t count = pooled.size();
  if (dtype == DType::kFloat32) std::copy_n(pooled.data(), count, static_cast<float*>(out));
  else if (dtype == DType::kFloat16) ConvertFloatToHalf(pooled.data(), static_cast<uint16_t*>(out), count);
  else ConvertFloatToBFloat16(pooled.data(), static_cast<uint16_t*>(out), count);
}

}  // namespace

void MaxPool2x2RowChannelsLast(DType dtype, bool avx512, const void* top, const void* bottom, int64_t out_w,
                               int64_t channels, void* out) {
#if defined(__x86_64__)
  const bool half = dtype == DType::kFloat16;
  if (dtype == DType::kFloat32) {
    const float *t = static_cast<const float*>(top), *b = static_cast<const float*>(bottom);
    if (avx512) return MaxPool2x2RowChannelsLastAvx512<false>(t, b, out_w, channels, static_cast<float*>(out));
    if (channels % 8 == 0 && PoolsRunAvx2()) {
      return MaxPool2x2RowChannelsLastAvx2<false>(t, b, out_w, channels, static_cast<float*>(out));
    }
  } else if (IsLowPrecision(dtype)) {
    const uint16_t *t = static_cast<const uint16_t*>(top), *b = static_cast<const uint16_t*>(bottom);
    uint16_t* o = static_cast<uint16_t*>(out);
    if (avx512 && channels % 16 == 0) {
      const auto kernel = half ? MaxPool2x2RowChannelsLastLowAvx512<DType::kFloat16>
                               : MaxPool2x2RowChannelsLastLowAvx512<DType::kBFloat16>;
      return kernel(t, b, out_w, channels, o);
    }
    if (channels % 8 == 0 && PoolsRunAvx2()) {
      const auto kernel = half ? MaxPool2x2RowChannelsLastLowAvx2<DType::kFloat16>
                               : MaxPool2x2RowChannelsLastLowAvx2<DType::kBFloat16>;
      return kernel(t, b, out_w, channels, o);
    }
  }
#endif
  MaxPool2x2RowPortable(dtype, top, bottom, out_w, channels, out);
}

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
  const int64_t grain = ItemsPerChunk(out_row_size, kPoolOutputsPerChunk);
#if defined(__x86_64__)
  if (tiles == TileKernels::kAvx512 && IsLowPrecision(x.dtype()) && channels % 16 == 0) {
    MaxPool2x2ChannelsLastLow(context.threads(), x, g, true, y_channels_last, grain, y);
    return Status::Ok();
  }
  if (tiles == TileKernels::kAvx2 && IsLowPrecision(x.dtype())) {
    MaxPool2x2ChannelsLastLow(context.threads(), x, g, false, y_channels_last, grain, y);
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

}  // namespace onnx_amp
