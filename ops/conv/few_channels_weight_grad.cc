#include "ops/conv/few_channels_weight_grad.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/common/float_compute.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#define ONNX_AMP_WEIGHT_GRAD_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
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

#if defined(__x86_64__) || defined(__i386__)

template <int kTaps, DType kDtype>
ONNX_AMP_WEIGHT_GRAD_TARGET void AddImageBlock(const ImageBlock& a) {
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
  constexpr auto kAllTaps = std::make_integer_sequence<int, static_cast<int>(kMaxWeightGradTaps)>();
  if (dtype == DType::kFloat16) return AddImageBlockOf<DType::kFloat16>(taps, a, kAllTaps);
  AddImageBlockOf<DType::kBFloat16>(taps, a, kAllTaps);
}

bool CpuHasAvx512() { return __builtin_cpu_supports("avx512f") != 0; }

#else

void AddImage(DType, int64_t, const ImageBlock&) {}
bool CpuHasAvx512() { return false; }

#endif

// Image `image` of X widened into `padded` ([C, PH, PW]), whose pads stay zero.
void StageImage(const Tensor& x, bool channels_last, int64_t image, const WindowGeometry& g, float* padded,
                std::vector<float>& row) {
  const int64_t channels = x.dim(1), height = g.in[0], width = g.in[1];
  const int64_t padded_h = height + g.pads_begin[0] + g.pads_end[0], padded_w = width + g.pads_begin[1] + g.pads_end[1];
  for (int64_t r = 0; r < height; ++r) {
    float* line = padded + (r + g.pads_begin[0]) * padded_w + g.pads_begin[1];
    if (!channels_last) {
      for (int64_t c = 0; c < channels; ++c) {
        LoadFloat32Block(x, ((image * channels + c) * height + r) * width, width, line + c * padded_h * padded_w);
      }
      continue;
    }
    row.resize(static_cast<size_t>(width * channels));
    LoadFloat32Block(x, (image * height + r) * width * channels, width * channels, row.data());
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t col = 0; col < width; ++col) line[c * padded_h * padded_w + col] = row[col * channels + c];
    }
  }
}

}  // namespace

bool TakesFewChannelsWeightGrad(const Tensor& dy, bool dy_channels_last, const Tensor& x, int64_t group,
                                const WindowGeometry& g) {
  const DType dtype = x.dtype();
  if (!IsLowPrecision(dtype)) return false;
  if (dy.dtype() != dtype || x.rank() != 4 || g.rank() != 2 || group != 1 || !dy_channels_last) return false;
  return dy.dim(1) % 16 == 0 && x.dim(1) * g.kernel[0] * g.kernel[1] <= kMaxWeightGradTaps && CpuHasAvx512();
}

Status FewChannelsWeightGrad(KernelContext& context, const Tensor& dy, const Tensor& x, bool x_channels_last,
                             const WindowGeometry& g, float* dw, float* db) {
  const int64_t n = x.dim(0), channels = x.dim(1), maps = dy.dim(1);
  const int64_t padded_h = g.in[0] + g.pads_begin[0] + g.pads_end[0];
  const int64_t padded_w = g.in[1] + g.pads_begin[1] + g.pads_end[1];
  const int64_t taps = channels * g.kernel[0] * g.kernel[1], blocks = maps / 16;
  std::vector<int64_t> tap_offsets;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
        tap_offsets.push_back((c * padded_h + kh * g.dilations[0]) * padded_w + kw * g.dilations[1]);
      }
    }
  }
  // Per chunk of images and block of maps: taps x 16 window sums, then 16 for dB.
  const int64_t block_floats = (taps + 1) * 16, chunk_floats = blocks * block_floats;
  const int64_t chunks = (n + kWeightGradImages - 1) / kWeightGradImages;
  std::vector<float> partial(static_cast<size_t>(chunks * chunk_floats), 0.0f);
  const int64_t dy_image = g.out[0] * g.out[1] * maps;
  const size_t dy_bytes = DTypeSize(dy.dtype());
  context.threads().ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(channels * padded_h * padded_w), 0.0f), row;
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t image = chunk * kWeightGradImages; image < std::min(n, (chunk + 1) * kWeightGradImages); ++image) {
        StageImage(x, x_channels_last, image, g, padded.data(), row);
        ImageBlock a;
        a.dy = static_cast<const char*>(dy.raw_data()) + static_cast<size_t>(image * dy_image) * dy_bytes;
        a.maps = maps;
        a.x = padded.data();
        a.tap_offsets = tap_offsets.data();
        a.out_h = g.out[0];
        a.out_w = g.out[1];
        a.row_step = g.strides[0] * padded_w;
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
