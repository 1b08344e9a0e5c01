#include "ops/conv/few_channels_conv.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "ops/common/float_vec_isa.h"
#include "ops/conv/few_channels_loops.h"
#include "ops/conv/pool_2d.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_FEW_CHANNELS_X86 1
#else
#define ONNX_AMP_FEW_CHANNELS_X86 0
#endif

namespace onnx_amp {
namespace {

FewChannelsPath WidestPath() {
  for (FewChannelsPath path : {FewChannelsPath::kAvx512, FewChannelsPath::kAvx2}) {
    if (FewChannelsPathSupported(path)) return path;
  }
  return FewChannelsPath::kNone;
}

std::atomic<FewChannelsPath>& Setting() {
  static std::atomic<FewChannelsPath> setting(WidestPath());
  return setting;
}

// The loops of a path and its block of maps.
struct Loops {
  int64_t lanes = 0;
  void (*sum_row)(const FewChannelsRow&) = nullptr;
  void (*sum_pooled_row)(DType, const FewChannelsPooledRow&) = nullptr;
  void (*add_image)(DType, const FewChannelsImage&, int64_t) = nullptr;
};

Loops LoopsOf(FewChannelsPath path) {
#if ONNX_AMP_FEW_CHANNELS_X86
  if (path == FewChannelsPath::kAvx512) {
    return {kFewChannelsLanesAvx512, FewChannelsSumRowAvx512, FewChannelsSumPooledRowAvx512,
            FewChannelsAddImageAvx512};
  }
  return {kFewChannelsLanesAvx2, FewChannelsSumRowAvx2, FewChannelsSumPooledRowAvx2, FewChannelsAddImageAvx2};
#else
  return {};
#endif
}

// The order a path's forward sums each output in: that of oneDNN's direct kernel for the
// same instruction set, which runs the layer when Y is NCHW, so that plan gets the same
// float32 sums. AVX-512: from zero over the taps in (KH, KW, C) order, then the bias;
// AVX2: from the bias over the taps in W's (C, KH, KW) order.
bool SumsBiasLast(FewChannelsPath path) { return path == FewChannelsPath::kAvx512; }

// X's images widened one at a time into a buffer of [C, PH, PW] floats whose pads stay
// zero, and where each window tap reads from a window's corner in it, the taps in the
// path's order.
struct PaddedImage {
  int64_t channels = 0, height = 0, width = 0, pad_top = 0, pad_left = 0, padded_h = 0, padded_w = 0;
  std::vector<int64_t> tap_offsets;
  std::vector<int64_t> tap_weights;  // each tap's index among W's [C, KH, KW] weights of a map

  PaddedImage(const Tensor& x, const WindowGeometry& g, FewChannelsPath path)
      : channels(x.dim(1)), height(g.in[0]), width(g.in[1]), pad_top(g.pads_begin[0]), pad_left(g.pads_begin[1]),
        padded_h(g.in[0] + g.pads_begin[0] + g.pads_end[0]), padded_w(g.in[1] + g.pads_begin[1] + g.pads_end[1]) {
    const bool channels_inner = SumsBiasLast(path);
    const int64_t outer = channels_inner ? g.kernel[0] * g.kernel[1] : channels;
    const int64_t inner = channels_inner ? channels : g.kernel[0] * g.kernel[1];
    for (int64_t i = 0; i < outer; ++i) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t c = channels_inner ? j : i, window_tap = channels_inner ? i : j;
        const int64_t kh = window_tap / g.kernel[1], kw = window_tap % g.kernel[1];
        tap_offsets.push_back((c * padded_h + kh * g.dilations[0]) * padded_w + kw * g.dilations[1]);
        tap_weights.push_back(c * g.kernel[0] * g.kernel[1] + window_tap);
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

bool FewChannelsPathSupported(FewChannelsPath path) {
  switch (path) {
    case FewChannelsPath::kNone: return true;
    case FewChannelsPath::kAvx2: return CpuHasFloatVecAvx2();
    case FewChannelsPath::kAvx512: return CpuHasFloatVecAvx512();
  }
  return false;
}

FewChannelsPath CurrentFewChannelsPath() { return Setting().load(); }

FewChannelsPath SetFewChannelsPath(FewChannelsPath path) {
  ONNX_AMP_ASSERT(FewChannelsPathSupported(path), "this CPU lacks the few-channels loop path asked for");
  return Setting().exchange(path);
}

std::string DescribeFewChannelsConv() {
  const std::string layers = "first layers of 1 to " + std::to_string(kMaxFewChannels) + " channels: ";
  switch (CurrentFewChannelsPath()) {
    case FewChannelsPath::kAvx512:
      return layers + "avx512 loops for float16 and bfloat16 (up to " + std::to_string(kMaxFewChannelsTaps) +
             " weights a map), and for float32 where they pool the output; oneDNN's kernels for other float32 ones";
    case FewChannelsPath::kAvx2:
      return layers + "avx2 loops for float32, float16 and bfloat16 (up to " +
             std::to_string(kMaxFewChannelsTapsAvx2) + " weights a map)";
    case FewChannelsPath::kNone: break;
  }
  return layers + "oneDNN's kernels (no AVX2 with FMA and F16C)";
}

namespace {

// TakesFewChannelsConv for X of `channels` and a channels-last Y, float32 on AVX-512 too
// when the loops pool Y.
bool LoopsTake(DType dtype, int64_t channels, const Shape& w, int64_t group, bool pooled) {
  const FewChannelsPath path = CurrentFewChannelsPath();
  if (path == FewChannelsPath::kNone || w.size() != 4 || group != 1) return false;
  if (dtype == DType::kFloat32 ? path != FewChannelsPath::kAvx2 && !pooled : !IsLowPrecision(dtype)) return false;
  const int64_t max_taps = path == FewChannelsPath::kAvx512 ? kMaxFewChannelsTaps : kMaxFewChannelsTapsAvx2;
  return channels <= kMaxFewChannels && channels == w[1] && channels * w[2] * w[3] <= max_taps && w[0] % 16 == 0;
}

}  // namespace

bool TakesFewChannelsConv(DType dtype, const Shape& x, const Shape& w, int64_t group, bool maps_channels_last,
                          const WindowGeometry& g) {
  return x.size() == 4 && g.rank() == 2 && maps_channels_last && LoopsTake(dtype, x[1], w, group, false);
}

bool FewChannelsConvPoolsOutput(const Tensor& w, int64_t group) {
  return w.rank() == 4 && LoopsTake(w.dtype(), w.dim(1), w.shape(), group, true);
}

Status FewChannelsConv(KernelContext& context, const Tensor& x, bool x_channels_last, const Tensor& w,
                       const float* bias, const WindowGeometry& g, const FusedActivation& activation, bool pooled,
                       Tensor& y) {
  const int64_t n = x.dim(0), maps = w.dim(0);
  const FewChannelsPath path = CurrentFewChannelsPath();
  const PaddedImage image(x, g, path);
  const int64_t taps = static_cast<int64_t>(image.tap_offsets.size());
  // The weights as [taps, M], so that a block of maps of one tap is one load.
  const std::vector<float> w_values = ToFloat32(w);
  std::vector<float> weights(static_cast<size_t>(taps * maps)), zeros;
  for (int64_t m = 0; m < maps; ++m) {
    for (int64_t t = 0; t < taps; ++t) weights[t * maps + m] = w_values[m * taps + image.tap_weights[t]];
  }
  if (bias == nullptr) {
    zeros.assign(static_cast<size_t>(maps), 0.0f);
    bias = zeros.data();
  }
  const int64_t out_h = g.out[0], out_w = g.out[1], row_floats = out_w * maps;
  const int64_t pooled_h = out_h / 2, pooled_row = out_w / 2 * maps;
  const size_t element_bytes = DTypeSize(y.dtype());
  const Loops loops = LoopsOf(path);
  // Relu (or none) is applied in registers where the loops pool; other activations, and
  // unpooled Y, through a row of float32 sums stored by StoreBlockWithActivation.
  const bool pools_in_registers = pooled && (activation.kind == FusedActivationKind::kNone ||
                                             activation.kind == FusedActivationKind::kRelu);
  context.threads().ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(image.Floats()), 0.0f), staging;
    std::vector<float> row(pools_in_registers ? 0 : static_cast<size_t>(row_floats));
    // With `pooled` off registers: the two rows of a row of windows, stored as the unpooled
    // Y would be.
    Tensor rows = pooled && !pools_in_registers ? Tensor::Empty(y.dtype(), {2 * row_floats}) : Tensor();
    for (int64_t i = begin; i < end; ++i) {
      image.Stage(x, x_channels_last, i, padded.data(), staging);
      FewChannelsRow a;
      a.tap_offsets = image.tap_offsets.data();
      a.taps = taps;
      a.weights = weights.data();
      a.bias = bias;
      a.bias_last = SumsBiasLast(path);
      a.maps = maps;
      a.out_w = out_w;
      a.column_step = g.strides[1];
      a.row = row.data();
      const auto corner = [&](int64_t oh) { return padded.data() + oh * g.strides[0] * image.padded_w; };
      if (pools_in_registers) {
        FewChannelsPooledRow pair;
        pair.sums = a;
        pair.row_step = g.strides[0] * image.padded_w;
        pair.pooled_w = out_w / 2;
        pair.relu = activation.kind == FusedActivationKind::kRelu;
        for (int64_t ph = 0; ph < pooled_h; ++ph) {
          pair.sums.corner = corner(2 * ph);
          pair.out = static_cast<char*>(y.raw_data()) +
                     static_cast<size_t>((i * pooled_h + ph) * pooled_row) * element_bytes;
          for (pair.sums.block = 0; pair.sums.block < maps / loops.lanes; ++pair.sums.block) {
            loops.sum_pooled_row(y.dtype(), pair);
          }
        }
        continue;
      }
      const auto sum_row = [&](int64_t oh) {
        a.corner = corner(oh);
        for (a.block = 0; a.block < maps / loops.lanes; ++a.block) loops.sum_row(a);
      };
      if (!pooled) {
        for (int64_t oh = 0; oh < out_h; ++oh) {
          sum_row(oh);
          StoreBlockWithActivation(row.data(), y, (i * out_h + oh) * row_floats, row_floats, activation);
        }
        continue;
      }
      const char* pair = static_cast<const char*>(rows.raw_data());
      for (int64_t ph = 0; ph < pooled_h; ++ph) {
        for (int64_t k = 0; k < 2; ++k) {
          sum_row(2 * ph + k);
          StoreBlockWithActivation(row.data(), rows, k * row_floats, row_floats, activation);
        }
        char* out = static_cast<char*>(y.raw_data()) +
                    static_cast<size_t>((i * pooled_h + ph) * pooled_row) * element_bytes;
        const char* bottom = pair + static_cast<size_t>(row_floats) * element_bytes;
        MaxPool2x2RowChannelsLast(y.dtype(), path == FewChannelsPath::kAvx512, pair, bottom, out_w / 2, maps, out);
      }
    }
  });
  return Status::Ok();
}

Status FewChannelsWeightGrad(KernelContext& context, const Tensor& dy, const Tensor& x, bool x_channels_last,
                             const WindowGeometry& g, float* dw, float* db) {
  const FewChannelsPath path = CurrentFewChannelsPath();
  const Loops loops = LoopsOf(path);
  const int64_t n = x.dim(0), maps = dy.dim(1), lanes = loops.lanes, blocks = maps / lanes;
  const PaddedImage image(x, g, path);
  const int64_t taps = static_cast<int64_t>(image.tap_offsets.size());
  // Per chunk of images and block of maps: taps x lanes window sums, then lanes for dB.
  const int64_t block_floats = (taps + 1) * lanes, chunk_floats = blocks * block_floats;
  const int64_t chunks = (n + kWeightGradImages - 1) / kWeightGradImages;
  std::vector<float> partial(static_cast<size_t>(chunks * chunk_floats), 0.0f);
  const int64_t dy_image = g.out[0] * g.out[1] * maps;
  const size_t dy_bytes = DTypeSize(dy.dtype());
  context.threads().ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded(static_cast<size_t>(image.Floats()), 0.0f), staging;
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t i = chunk * kWeightGradImages; i < std::min(n, (chunk + 1) * kWeightGradImages); ++i) {
        image.Stage(x, x_channels_last, i, padded.data(), staging);
        FewChannelsImage a;
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
          loops.add_image(dy.dtype(), a, taps);
        }
      }
    }
  });
  std::fill_n(dw, maps * taps, 0.0f);
  std::fill_n(db, maps, 0.0f);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t block = 0; block < blocks; ++block) {
      const float* sums = partial.data() + chunk * chunk_floats + block * block_floats;
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const int64_t map = block * lanes + lane;
        for (int64_t t = 0; t < taps; ++t) dw[map * taps + image.tap_weights[t]] += sums[t * lanes + lane];
        db[map] += sums[taps * lanes + lane];
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
