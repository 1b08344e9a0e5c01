#include "ops/conv/few_pixels_conv.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/few_rows_matmul.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/fused_activation.h"
#include "ops/common/onednn_utils.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_FEW_PIXELS_X86 1
#else
#define ONNX_AMP_FEW_PIXELS_X86 0
#endif

namespace onnx_amp {
namespace {

constexpr int64_t kBlock = 16;  // output channels per packed block (one AVX-512 vector)

std::atomic<bool>& EnabledSetting() {
  static std::atomic<bool> enabled(true);
  return enabled;
}

// Dims of one convolution as the path walks it.
struct Extents {
  int64_t batch, in_channels, out_channels, height, width, out_height, out_width, kernel_h, kernel_w;
  int64_t pixels() const { return batch * out_height * out_width; }
  int64_t depth() const { return kernel_h * kernel_w * in_channels; }  // k
  int64_t blocks() const { return out_channels / kBlock; }
};

Extents ExtentsOf(const FewPixelsConv& conv) {
  const WindowGeometry& g = *conv.window;
  return Extents{conv.x->dim(0), conv.x->dim(1), conv.w->dim(0), g.in[0],     g.in[1],
                 g.out[0],       g.out[1],       g.kernel[0],    g.kernel[1]};
}

// Calls place(oc, kk, w[oc][in][ky][kx]) for every weight, kk = (ky, kx, in): the order
// the kernels sum in.
template <typename Bits, typename Place>
void ForEachWeight(const Bits* w, const Extents& e, Place place) {
  for (int64_t oc = 0; oc < e.out_channels; ++oc) {
    for (int64_t ic = 0; ic < e.in_channels; ++ic) {
      for (int64_t ky = 0; ky < e.kernel_h; ++ky) {
        for (int64_t kx = 0; kx < e.kernel_w; ++kx) {
          place(oc, (ky * e.kernel_w + kx) * e.in_channels + ic,
                w[((oc * e.in_channels + ic) * e.kernel_h + ky) * e.kernel_w + kx]);
        }
      }
    }
  }
}

// k rounded up to even for the VDPBF16PS kernel; the extra term is a zero.
int64_t PairDepth(const Extents& e) { return (e.depth() + 1) / 2 * 2; }

// How one node's weights are packed for the kernel that runs them.
enum class Packing {
  kBlocks,  // [out / 16][k][16], in W's own dtype (the 16-bit types moved as bits)
  kPairs,   // bfloat16 [out / 16][k / 2][16][2], k padded to even with zeros
};

// The node's packed weights, packed on first use (and again when W's data changes).
Expected<const void*> PackedWeightsFor(KernelContext& context, const FewPixelsConv& conv, const Extents& e,
                                       Packing packing) {
  dnn::PackedWeights* cache = dnn::PackedWeightsOf(context, 1);
  if (cache == nullptr) return InternalError("the few-pixels convolution needs constant weights");
  const Tensor& w = *conv.w;
  const char* key = packing == Packing::kPairs ? "few_pixels_bf16_pairs" : "few_pixels";
  dnnl::memory packed = cache->Find(key, w.raw_data());
  if (packed) return static_cast<const void*>(packed.get_data_handle());
  const int64_t depth = packing == Packing::kPairs ? PairDepth(e) : e.depth();
  std::shared_ptr<Buffer> storage;
  try {
    // float16 weights are kept as 16-bit words too: oneDNN's memory only holds them.
    const auto type = w.dtype() == DType::kFloat32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
    const dnnl::memory::desc desc({e.out_channels * depth}, type, dnnl::memory::format_tag::a);
    storage = Buffer::AllocateCpu(desc.get_size());
    packed = dnnl::memory(desc, dnn::CpuEngine(), storage->data());
  } catch (const dnnl::error& error) {
    return InternalError(std::string("cannot allocate the packed weights: ") + error.what());
  }
  if (w.dtype() == DType::kFloat32) {
    float* blocks = static_cast<float*>(packed.get_data_handle());
    ForEachWeight(w.data<float>(), e, [&](int64_t oc, int64_t kk, float value) {
      blocks[((oc / kBlock) * depth + kk) * kBlock + oc % kBlock] = value;
    });
  } else if (packing == Packing::kBlocks) {
    uint16_t* blocks = static_cast<uint16_t*>(packed.get_data_handle());
    ForEachWeight(static_cast<const uint16_t*>(w.raw_data()), e, [&](int64_t oc, int64_t kk, uint16_t bits) {
      blocks[((oc / kBlock) * depth + kk) * kBlock + oc % kBlock] = bits;
    });
  } else {
    uint16_t* pairs = static_cast<uint16_t*>(packed.get_data_handle());
    std::memset(pairs, 0, static_cast<size_t>(e.out_channels * depth) * sizeof(uint16_t));
    ForEachWeight(static_cast<const uint16_t*>(w.raw_data()), e, [&](int64_t oc, int64_t kk, uint16_t bits) {
      pairs[((oc / kBlock) * depth + kk / 2 * 2) * kBlock + oc % kBlock * 2 + kk % 2] = bits;
    });
  }
  cache->Store(key, w.raw_data(), packed, std::move(storage));
  return static_cast<const void*>(packed.get_data_handle());
}

// The im2col rows of X (`x`: its values as float32, or its bfloat16 bits, in X's
// layout): rows[pixel][(ky, kx, in)], `row_length` >= k values a row, zeros where the
// window leaves the input and past k.
template <typename Value>
std::vector<Value> GatherRows(const FewPixelsConv& conv, const Extents& e, const Value* x, int64_t row_length) {
  const WindowGeometry& g = *conv.window;
  const int64_t plane = e.height * e.width;
  std::vector<Value> rows(static_cast<size_t>(e.pixels() * row_length), Value{0});
  for (int64_t n = 0; n < e.batch; ++n) {
    for (int64_t oy = 0; oy < e.out_height; ++oy) {
      for (int64_t ox = 0; ox < e.out_width; ++ox) {
        Value* row = rows.data() + ((n * e.out_height + oy) * e.out_width + ox) * row_length;
        for (int64_t ky = 0; ky < e.kernel_h; ++ky) {
          const int64_t iy = oy * g.strides[0] - g.pads_begin[0] + ky * g.dilations[0];
          if (iy < 0 || iy >= e.height) continue;
          const int64_t ix0 = ox * g.strides[1] - g.pads_begin[1];
          if (conv.x_channels_last && g.dilations[1] == 1 && ix0 >= 0 && ix0 + e.kernel_w <= e.width) {
            // The window's row of taps lies side by side in X: one copy.
            const Value* taps = x + ((n * e.height + iy) * e.width + ix0) * e.in_channels;
            std::memcpy(row + ky * e.kernel_w * e.in_channels, taps,
                        static_cast<size_t>(e.kernel_w * e.in_channels) * sizeof(Value));
            continue;
          }
          for (int64_t kx = 0; kx < e.kernel_w; ++kx) {
            const int64_t ix = ox * g.strides[1] - g.pads_begin[1] + kx * g.dilations[1];
            if (ix < 0 || ix >= e.width) continue;
            Value* taps = row + (ky * e.kernel_w + kx) * e.in_channels;
            const int64_t pixel = (n * e.height + iy) * e.width + ix;
            if (conv.x_channels_last) {
              std::memcpy(taps, x + pixel * e.in_channels, static_cast<size_t>(e.in_channels) * sizeof(Value));
            } else {
              const Value* at = x + n * e.in_channels * plane + iy * e.width + ix;
              for (int64_t ic = 0; ic < e.in_channels; ++ic) taps[ic] = at[ic * plane];
            }
          }
        }
      }
    }
  }
  return rows;
}

// A ParallelFor body running `kernel` on `args` over each chunk's blocks of channels, in
// tiles of at most kFewPixelsMax pixels (their sums fill the registers) whose im2col rows
// are `row_length` values apart; each tile reads the chunk's weights again, from cache
// for the small convolutions that have more pixels than one tile.
template <typename Args>
std::function<void(int64_t, int64_t)> OverBlocks(const Args& args, int64_t row_length, void (*kernel)(const Args&)) {
  return [args, row_length, kernel](int64_t begin, int64_t end) {
    for (int first = 0; first < args.pixels; first += static_cast<int>(kFewPixelsMax)) {
      Args tile = args;
      tile.block_begin = begin;
      tile.block_end = end;
      tile.pixels = std::min(args.pixels - first, static_cast<int>(kFewPixelsMax));
      tile.rows = args.rows + first * row_length;
      tile.sums = args.sums + first * args.sums_stride;
      kernel(tile);
    }
  };
}

// Where output (pixel, channel) sits in a tensor of Y's shape stored NCHW or channels-last.
int64_t OutputIndex(const Extents& e, int64_t pixel, int64_t channel, bool channels_last) {
  if (channels_last) return pixel * e.out_channels + channel;
  const int64_t plane = e.out_height * e.out_width;
  return ((pixel / plane) * e.out_channels + channel) * plane + pixel % plane;
}

}  // namespace

bool FewPixelsConvSupported() { return CurrentFewRowsPath() != FewRowsPath::kNone; }

bool FewPixelsConvEnabled() { return EnabledSetting().load(); }

bool SetFewPixelsConvEnabled(bool enabled) { return EnabledSetting().exchange(enabled); }

bool TakesFewPixels(KernelContext& context, const FewPixelsConv& conv) {
  if (!FewPixelsConvEnabled() || !FewPixelsConvSupported()) return false;
  const DType dtype = conv.x->dtype();
  if (dtype != DType::kFloat32 && !IsLowPrecision(dtype)) return false;
  // Constant weights packed once and kept as the node's state; packing per run would
  // cost more than it saves.
  if (conv.x->rank() != 4 || conv.group != 1 || !context.input_is_constant(1) || context.state() == nullptr) {
    return false;
  }
  const Extents e = ExtentsOf(conv);
  return FewPixelsSizeFits(e.pixels(), e.depth(), e.out_channels) && e.out_channels % kBlock == 0;
}

bool FewPixelsSizeFits(int64_t pixels, int64_t depth, int64_t out_channels) {
  if (pixels < 1 || depth < 1) return false;
  if (pixels <= kFewPixelsMax) return true;
  const double multiply_adds = static_cast<double>(pixels) * static_cast<double>(depth * out_channels);
  return multiply_adds <= kSmallConvMultiplyAdds && depth >= kSmallConvMinDepth;
}

bool FewPixelsSumsBf16Pairs(int64_t pixels, int64_t weights) {
  // The speedup is 0 where the CPU (or ONNX_AMP_MAX_CPU_ISA) has no AVX512_BF16; the
  // native setting alone would say yes there, for oneDNN, which emulates the products.
  return CurrentFewRowsPath() == FewRowsPath::kAvx512 && Bf16DotSpeedup() > 0.0 &&
         NativeBf16Pays(static_cast<double>(pixels) * static_cast<double>(weights), static_cast<double>(weights));
}

std::string DescribeFewPixelsConv() {
  const std::string convolutions = "convolutions of at most " + std::to_string(kFewPixelsMax) + " output pixels or " +
                                   std::to_string(static_cast<int64_t>(kSmallConvMultiplyAdds)) + " multiply-adds: ";
  if (!FewPixelsConvSupported()) return convolutions + "oneDNN's kernels (no AVX2 with FMA and F16C)";
  // Any weight count: the choice depends on the rows per weight, the pixels.
  const std::string bf16 = FewPixelsSumsBf16Pairs(kFewPixelsMax, 1)    ? "on VDPBF16PS"
                           : FewPixelsSumsBf16Pairs(kFewPixelsMax - 1, 1) ? "on VDPBF16PS below 16 pixels"
                                                                          : "widened to float32";
  return convolutions + std::string(FewRowsPathName(CurrentFewRowsPath())) +
         " kernel streaming the weights once, bfloat16 " + bf16;
}

Status RunFewPixelsConv(KernelContext& context, const FewPixelsConv& conv, const FusedActivation& activation) {
#if ONNX_AMP_FEW_PIXELS_X86
  const Extents e = ExtentsOf(conv);
  const int64_t pixels = e.pixels();
  const bool pairs = conv.x->dtype() == DType::kBFloat16 && conv.w->dtype() == DType::kBFloat16 &&
                     FewPixelsSumsBf16Pairs(pixels, conv.w->num_elements());
  ONNX_AMP_ASSIGN_OR_RETURN(const void* packed,
                            PackedWeightsFor(context, conv, e, pairs ? Packing::kPairs : Packing::kBlocks));
  std::vector<float> sums(static_cast<size_t>(pixels * e.out_channels));
  std::vector<float> rows;
  std::vector<uint16_t> pair_rows;
  std::function<void(int64_t, int64_t)> run_blocks;
  if (pairs) {
    pair_rows = GatherRows(conv, e, static_cast<const uint16_t*>(conv.x->raw_data()), PairDepth(e));
    run_blocks = OverBlocks(FewPixelsPairArgs{pair_rows.data(), static_cast<int>(pixels), PairDepth(e),
                                              static_cast<const uint16_t*>(packed), 0, 0, sums.data(), e.out_channels},
                            PairDepth(e), FewPixelsAvx512Bf16);
  } else {
    const std::vector<float> wide = conv.x->dtype() == DType::kFloat32 ? std::vector<float>() : ToFloat32(*conv.x);
    rows = GatherRows(conv, e, wide.empty() ? conv.x->data<float>() : wide.data(), e.depth());
    run_blocks = OverBlocks(FewPixelsArgs{rows.data(), static_cast<int>(pixels), e.depth(), packed, conv.w->dtype(),
                                          0, 0, sums.data(), e.out_channels},
                            e.depth(), CurrentFewRowsPath() == FewRowsPath::kAvx512 ? FewPixelsAvx512 : FewPixelsAvx2);
  }
  ThreadPool& threads = context.threads();
  const double multiply_adds = static_cast<double>(pixels) * static_cast<double>(e.depth() * e.out_channels);
  // Each thread streams one contiguous run of blocks.
  const int64_t grain = multiply_adds < dnn::kSerialMultiplyAdds
                            ? e.blocks()
                            : (e.blocks() + threads.num_threads() - 1) / std::max(threads.num_threads(), 1);
  threads.ParallelFor(e.blocks(), std::max<int64_t>(grain, 1), run_blocks);
  const std::vector<float> residual =
      conv.addend == nullptr || conv.addend->dtype() == DType::kFloat32 ? std::vector<float>() : ToFloat32(*conv.addend);
  const float* addend = conv.addend == nullptr ? nullptr
                        : residual.empty()     ? conv.addend->data<float>()
                                               : residual.data();
  // ((sum + bias) + addend), finished in place in the sums' own (channels-last) order.
  for (int64_t pixel = 0; pixel < pixels; ++pixel) {
    float* row = sums.data() + pixel * e.out_channels;
    if (!conv.bias.empty()) {
      for (int64_t channel = 0; channel < e.out_channels; ++channel) row[channel] += conv.bias[channel];
    }
    if (addend != nullptr) {
      for (int64_t channel = 0; channel < e.out_channels; ++channel) {
        row[channel] += addend[OutputIndex(e, pixel, channel, conv.addend_channels_last)];
      }
    }
  }
  if (conv.y_channels_last) {
    StoreWithActivation(sums.data(), *conv.y, activation, threads);
    return Status::Ok();
  }
  std::vector<float> values(sums.size());
  for (int64_t pixel = 0; pixel < pixels; ++pixel) {
    for (int64_t channel = 0; channel < e.out_channels; ++channel) {
      values[OutputIndex(e, pixel, channel, false)] = sums[pixel * e.out_channels + channel];
    }
  }
  StoreWithActivation(values.data(), *conv.y, activation, threads);
  return Status::Ok();
#else
  (void)context;
  (void)conv;
  (void)activation;
  return Unsupported("the few-pixels convolution needs x86-64");
#endif
}

}  // namespace onnx_amp
