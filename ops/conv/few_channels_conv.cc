#include "ops/conv/few_channels_conv.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#define ONNX_AMP_FEW_CHANNELS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#endif

namespace onnx_amp {
namespace {

// One image's share of one block of 16 maps: its window sums are added onto `sums`
// (taps x 16 floats, then 16 for dB).
struct ImageBlock {
  const void* dy = nullptr;  // the image's dY, [OH, OW, M]
  int64_t maps = 0, block = 0;
  const float* x = nullptr;  // the image's X, widened into [C, PH, PW] with zero pads
  const int64_t* tap_offsets = nullptr;  // of each tap's input, from a window's corner in x
  int64_t out_h = 0, out_w = 0;
  // Floats in x between the window corners of neighbouring output rows (stride x PW) and
  // columns (stride).
  int64_t row_step = 0, column_step = 0;
  float* sums = nullptr;
};

// One output row of one block of 16 maps: Y's float32 sums for the row's pixels.
struct RowBlock {
  const float* corner = nullptr;  // the row's first window corner in the padded X
  const int64_t* tap_offsets = nullptr;
  const float* weights = nullptr;  // [taps, M]
  const float* bias = nullptr;     // [M]
  int64_t taps = 0, maps = 0, block = 0, out_w = 0, column_step = 0;
  float* row = nullptr;  // [OW, M]
};

#if defined(__x86_64__) || defined(__i386__)

template <int kTaps, DType kDtype>
ONNX_AMP_FEW_CHANNELS_TARGET void AddImageBlock(const ImageBlock& a) {
  __m512 sums[kTaps];
  for (int t = 0; t < kTaps; ++t) sums[t] = _mm512_loadu_ps(a.sums + t * 16);
  __m512 bias = _mm512_loadu_ps(a.sums + kTaps * 16);
  for (int64_t oh = 0; oh < a.out_h; ++oh) {
    const float* corner = a.x + oh * a.row_step;
    const int64_t pixel = oh * a.out_w;
    for (int64_t ow = 0; ow < a.out_w; ++ow, corner += a.column_step) {
      const __m512 g = Widen16<kDtype>(a.dy, (pixel + ow) * a.maps + a.block * 16);
      bias = _mm512_add_ps(bias, g);
#pragma GCC unroll 27
      for (int t = 0; t < kTaps; ++t) sums[t] = _mm512_fmadd_ps(g, _mm512_set1_ps(corner[a.tap_offsets[t]]), sums[t]);
    }
  }
  for (int t = 0; t < kTaps; ++t) _mm512_storeu_ps(a.sums + t * 16, sums[t]);
  _mm512_storeu_ps(a.sums + kTaps * 16, bias);
}

// One instantiation per tap count, so each keeps its sums in registers.
template <DType kDtype, int... kTaps>
void AddImageBlockOf(int64_t taps, const ImageBlock& a, std::integer_sequence<int, kTaps...>) {
  using Kernel = void (*)(const ImageBlock&);
  static constexpr Kernel kKernels[] = {&AddImageBlock<kTaps + 1, kDtype>...};
  kKernels[taps - 1](a);
}

void AddImage(DType dtype, int64_t taps, const ImageBlock& a) {
  constexpr auto kAllTaps = std::make_integer_sequence<int, static_cast<int>(kMaxFewChannelsTaps)>();
  if (dtype == DType::kFloat16) return AddImageBlockOf<DType::kFloat16>(taps, a, kAllTaps);
  AddImageBlockOf<DType::kBFloat16>(taps, a, kAllTaps);
}

// Pixels summed side by side: a pixel's taps add into one register in turn, so a single
// pixel waits out the latency of each multiply-add; eight keep the FMA units busy.
constexpr int64_t kRowPixels = 8;

template <int kPixels>
ONNX_AMP_FEW_CHANNELS_TARGET inline void SumPixels(const RowBlock& a, const float* corner, float* out) {
  __m512 sums[kPixels];
  const __m512 bias = _mm512_loadu_ps(a.bias + a.block * 16);
  for (int p = 0; p < kPixels; ++p) sums[p] = bias;
  for (int64_t t = 0; t < a.taps; ++t) {
    const __m512 weight = _mm512_loadu_ps(a.weights + t * a.maps + a.block * 16);
    const float* tap = corner + a.tap_offsets[t];
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) sums[p] = _mm512_fmadd_ps(weight, _mm512_set1_ps(tap[p * a.column_step]), sums[p]);
  }
  for (int p = 0; p < kPixels; ++p) _mm512_storeu_ps(out + p * a.maps, sums[p]);
}

ONNX_AMP_FEW_CHANNELS_TARGET void SumRow(const RowBlock& a) {
  float* out = a.row + a.block * 16;
  int64_t ow = 0;
  for (; ow + kRowPixels <= a.out_w; ow += kRowPixels) {
    SumPixels<kRowPixels>(a, a.corner + ow * a.column_step, out + ow * a.maps);
  }
  for (; ow < a.out_w; ++ow) SumPixels<1>(a, a.corner + ow * a.column_step, out + ow * a.maps);
}

bool CpuHasAvx512() { return __builtin_cpu_supports("avx512f") != 0; }

#else

void SumRow(const RowBlock&) {}
void AddImage(DType, int64_t, const ImageBlock&) {}
bool CpuHasAvx512() { return false; }

#endif

// X's images widened one at a time into a buffer of [C, PH, PW] floats whose pads stay
// zero, and where each window tap reads from a window's corner in it.
struct PaddedImage {
  int64_t channels = 0, height = 0, width = 0, pad_top = 0, pad_left = 0, padded_h = 0, padded_w = 0;
  std::vector<int64_t> tap_offsets;  // in the order of W's [C, KH, KW] weights

  PaddedImage(const Tensor& x, const WindowGeometry& g)
      : channels(x.dim(1)), height(g.in[0]), width(g.in[1]), pad_top(g.pads_begin[0]), pad_left(g.pads_begin[1]),
        padded_h(g.in[0] + g.pads_begin[0] + g.pads_end[0]), padded_w(g.in[1] + g.pads_begin[1] + g.pads_end[1]) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
          tap_offsets.push_back((c * padded_h + kh * g.dilations[0]) * padded_w + kw * g.dilations[1]);
        }
      }
    }
  }

  int64_t Floats() const { return channels * padded_h * padded_w; }

  // Image `image` of X (NCHW or channels-last) into `padded`, a zeroed buffer of Floats().
  void Stage(const Tensor& x, bool channels_last, int64_t image, float* padded, std::vector<float>& staging) const {
    for (int64_t r = 0; r < height; ++r) {
      float* line = padded + (r + pad_top) * padded_w + pad_left;
      if (!channels_last) {
        for (int64_t c = 0; c < channels; ++c) {
          LoadFloat32Block(x, ((image * channels + c) * height + r) * width, width, line + c * padded_h * padded_w);
        }
        continue;
      }
      staging.resize(static_cast<size_t>(width * channels));
      LoadFloat32Block(x, (image * height + r) * width * channels, width * channels, staging.data());
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t col = 0; col < width; ++col) line[c * padded_h * padded_w + col] = staging[col * channels + c];
      }
    }
  }
};

}  // namespace

bool TakesFewChannelsConv(DType dtype, const Shape& x, const Shape& w, int64_t group, bool maps_channels_last,
                          const WindowGeometry& g) {
  if (!IsLowPrecision(dtype) || x.size() != 4 || w.size() != 4 || g.rank() != 2 || group != 1) return false;
  return maps_channels_last && x[1] <= kMaxFewChannels && x[1] * w[2] * w[3] <= kMaxFewChannelsTaps &&
         w[0] % 16 == 0 && CpuHasAvx512();
}

Status FewChannelsConv(KernelContext& context, const Tensor& x, bool x_channels_last, const Tensor& w,
                       const float* bias, const WindowGeometry& g, const FusedActivation& activation, Tensor& y) {
  const int64_t n = x.dim(0), maps = w.dim(0);
  const PaddedImage image(x, g);
  const int64_t taps = static_cast<int64_t>(image.tap_offsets.size());
  // The weights as [taps, M], so that 16 maps of one tap are one load.
  const std::vector<float> w_values = ToFloat32(w);
  std::vector<float> weights(static_cast<size_t>(taps * maps)), zeros;
  for (int64_t m = 0; m < maps; ++m) {
    for (int64_t t = 0; t < taps; ++t) weights[t * maps + m] = w_values[m * taps + t];
  }
  if (bias == nullptr) {
    zeros.assign(static_cast<size_t>(maps), 0.0f);
    bias = zeros.data();
  }
  const int64_t out_h = g.out[0], out_w = g.out[1], row_floats = out_w * maps;
  context.threads().ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(image.Floats()), 0.0f), staging, row(static_cast<size_t>(row_floats));
    for (int64_t i = begin; i < end; ++i) {
      image.Stage(x, x_channels_last, i, padded.data(), staging);
      RowBlock a;
      a.tap_offsets = image.tap_offsets.data();
      a.taps = taps;
      a.weights = weights.data();
      a.bias = bias;
      a.maps = maps;
      a.out_w = out_w;
      a.column_step = g.strides[1];
      a.row = row.data();
      for (int64_t oh = 0; oh < out_h; ++oh) {
        a.corner = padded.data() + oh * g.strides[0] * image.padded_w;
        for (a.block = 0; a.block < maps / 16; ++a.block) SumRow(a);
        StoreBlockWithActivation(row.data(), y, (i * out_h + oh) * row_floats, row_floats, activation);
      }
    }
  });
  return Status::Ok();
}

Status FewChannelsWeightGrad(KernelContext& context, const Tensor& dy, const Tensor& x, bool x_channels_last,
                             const WindowGeometry& g, float* dw, float* db) {
  const int64_t n = x.dim(0), maps = dy.dim(1), blocks = maps / 16;
  const PaddedImage image(x, g);
  const int64_t taps = static_cast<int64_t>(image.tap_offsets.size());
  // Per chunk of images and block of maps: taps x 16 window sums, then 16 for dB.
  const int64_t block_floats = (taps + 1) * 16, chunk_floats = blocks * block_floats;
  const int64_t chunks = (n + kWeightGradImages - 1) / kWeightGradImages;
  std::vector<float> partial(static_cast<size_t>(chunks * chunk_floats), 0.0f);
  const int64_t dy_image = g.out[0] * g.out[1] * maps;
  const size_t dy_bytes = DTypeSize(dy.dtype());
  context.threads().ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(image.Floats()), 0.0f), staging;
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t i = chunk * kWeightGradImages; i < std::min(n, (chunk + 1) * kWeightGradImages); ++i) {
        image.Stage(x, x_channels_last, i, padded.data(), staging);
        ImageBlock a;
        a.dy = static_cast<const char*>(dy.raw_data()) + static_cast<size_t>(i * dy_image) * dy_bytes;
        a.maps = maps;
        a.x = padded.data();
        a.tap_offsets = image.tap_offsets.data();
        a.out_h = g.out[0];
        a.out_w = g.out[1];
        a.row_step = g.strides[0] * image.padded_w;
        a.column_step = g.strides[1];
        for (a.block = 0; a.block < blocks; ++a.block) {
          a.sums = partial.data() + chunk * chunk_floats + a.block * block_floats;
          AddImage(dy.dtype(), taps, a);
        }
      }
    }
  });
  std::fill_n(dw, maps * taps, 0.0f);
  std::fill_n(db, maps, 0.0f);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t block = 0; block < blocks; ++block) {
      const float* sums = partial.data() + chunk * chunk_floats + block * block_floats;
      for (int64_t lane = 0; lane < 16; ++lane) {
        const int64_t map = block * 16 + lane;
        for (int64_t t = 0; t < taps; ++t) dw[map * taps + t] += sums[t * 16 + lane];
        db[map] += sums[taps * 16 + lane];
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
