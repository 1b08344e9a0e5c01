#include "ops/conv/few_pixels_conv.h"

#include <algorithm>
#include <atomic>
#include <cstring>

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
constexpr char kPackedKey[] = "few_pixels";

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

// W [out][in][kh][kw] as [out / 16][(ky, kx, in)][16], in its own dtype (the 16-bit
// types are moved as bits).
template <typename Bits>
void PackWeights(const Bits* w, const Extents& e, Bits* packed) {
  const int64_t depth = e.depth();
  for (int64_t oc = 0; oc < e.out_channels; ++oc) {
    Bits* block = packed + (oc / kBlock) * depth * kBlock + oc % kBlock;
    for (int64_t ic = 0; ic < e.in_channels; ++ic) {
      for (int64_t ky = 0; ky < e.kernel_h; ++ky) {
        for (int64_t kx = 0; kx < e.kernel_w; ++kx) {
          const int64_t kk = (ky * e.kernel_w + kx) * e.in_channels + ic;
          block[kk * kBlock] = w[((oc * e.in_channels + ic) * e.kernel_h + ky) * e.kernel_w + kx];
        }
      }
    }
  }
}

// The node's packed weights, packed on first use (and again when W's data changes).
Expected<const void*> PackedWeightsFor(KernelContext& context, const FewPixelsConv& conv, const Extents& e) {
  dnn::PackedWeights* cache = dnn::PackedWeightsOf(context, 1);
  if (cache == nullptr) return InternalError("the few-pixels convolution needs constant weights");
  const Tensor& w = *conv.w;
  dnnl::memory packed = cache->Find(kPackedKey, w.raw_data());
  if (!packed) {
    std::shared_ptr<Buffer> storage;
    try {
      // float16 weights are kept as 16-bit words too: oneDNN's memory only holds them.
      const auto type = w.dtype() == DType::kFloat32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
      const dnnl::memory::desc desc({w.num_elements()}, type, dnnl::memory::format_tag::a);
      storage = Buffer::AllocateCpu(desc.get_size());
      packed = dnnl::memory(desc, dnn::CpuEngine(), storage->data());
    } catch (const dnnl::error& e) {
      return InternalError(std::string("cannot allocate the packed weights: ") + e.what());
    }
    if (w.dtype() == DType::kFloat32) {
      PackWeights(w.data<float>(), e, static_cast<float*>(packed.get_data_handle()));
    } else {
      PackWeights(static_cast<const uint16_t*>(w.raw_data()), e, static_cast<uint16_t*>(packed.get_data_handle()));
    }
    cache->Store(kPackedKey, w.raw_data(), packed, std::move(storage));
  }
  return static_cast<const void*>(packed.get_data_handle());
}

// The im2col rows: rows[pixel][(ky, kx, in)], zeros where the window leaves the input.
std::vector<float> GatherRows(const FewPixelsConv& conv, const Extents& e) {
  const WindowGeometry& g = *conv.window;
  const std::vector<float> wide = conv.x->dtype() == DType::kFloat32 ? std::vector<float>() : ToFloat32(*conv.x);
  const float* x = wide.empty() ? conv.x->data<float>() : wide.data();
  const int64_t depth = e.depth(), plane = e.height * e.width;
  std::vector<float> rows(static_cast<size_t>(e.pixels() * depth), 0.0f);
  for (int64_t n = 0; n < e.batch; ++n) {
    for (int64_t oy = 0; oy < e.out_height; ++oy) {
      for (int64_t ox = 0; ox < e.out_width; ++ox) {
        float* row = rows.data() + ((n * e.out_height + oy) * e.out_width + ox) * depth;
        for (int64_t ky = 0; ky < e.kernel_h; ++ky) {
          const int64_t iy = oy * g.strides[0] - g.pads_begin[0] + ky * g.dilations[0];
          if (iy < 0 || iy >= e.height) continue;
          for (int64_t kx = 0; kx < e.kernel_w; ++kx) {
            const int64_t ix = ox * g.strides[1] - g.pads_begin[1] + kx * g.dilations[1];
            if (ix < 0 || ix >= e.width) continue;
            float* taps = row + (ky * e.kernel_w + kx) * e.in_channels;
            const int64_t pixel = (n * e.height + iy) * e.width + ix;
            if (conv.x_channels_last) {
              std::memcpy(taps, x + pixel * e.in_channels, static_cast<size_t>(e.in_channels) * sizeof(float));
            } else {
              const float* at = x + n * e.in_channels * plane + iy * e.width + ix;
              for (int64_t ic = 0; ic < e.in_channels; ++ic) taps[ic] = at[ic * plane];
            }
          }
        }
      }
    }
  }
  return rows;
}

// Where output (pixel, channel) sits in a tensor of Y's shape stored NCHW or channels-last.
int64_t OutputIndex(const Extents& e, int64_t pixel, int64_t channel, bool channels_last) {
  if (channels_last) return pixel * e.out_channels + channel;
  const int64_t plane = e.out_height * e.out_width;
  return ((pixel / plane) * e.out_channels + channel) * plane + pixel % plane;
}

}  // namespace

// The instructions of the few-rows AVX-512 kernels, which stream weights the same way.
bool FewPixelsConvSupported() { return FewRowsPathSupported(FewRowsPath::kAvx512); }

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
  return e.pixels() >= 1 && e.pixels() <= kFewPixelsMax && e.out_channels % kBlock == 0 && e.depth() > 0;
}

Status RunFewPixelsConv(KernelContext& context, const FewPixelsConv& conv, const FusedActivation& activation) {
#if ONNX_AMP_FEW_PIXELS_X86
  const Extents e = ExtentsOf(conv);
  ONNX_AMP_ASSIGN_OR_RETURN(const void* packed, PackedWeightsFor(context, conv, e));
  const std::vector<float> rows = GatherRows(conv, e);
  const int64_t pixels = e.pixels();
  std::vector<float> sums(static_cast<size_t>(pixels * e.out_channels));
  FewPixelsArgs args;
  args.rows = rows.data();
  args.pixels = static_cast<int>(pixels);
  args.k = e.depth();
  args.packed = packed;
  args.w_dtype = conv.w->dtype();
  args.sums = sums.data();
  args.sums_stride = e.out_channels;
  ThreadPool& threads = context.threads();
  const double multiply_adds = static_cast<double>(pixels) * static_cast<double>(e.depth() * e.out_channels);
  // Each thread streams one contiguous run of blocks.
  const int64_t grain = multiply_adds < dnn::kSerialMultiplyAdds
                            ? e.blocks()
                            : (e.blocks() + threads.num_threads() - 1) / std::max(threads.num_threads(), 1);
  threads.ParallelFor(e.blocks(), std::max<int64_t>(grain, 1), [&](int64_t begin, int64_t end) {
    FewPixelsArgs chunk = args;
    chunk.block_begin = begin;
    chunk.block_end = end;
    FewPixelsAvx512(chunk);
  });
  const std::vector<float> residual =
      conv.addend == nullptr || conv.addend->dtype() == DType::kFloat32 ? std::vector<float>() : ToFloat32(*conv.addend);
  const float* addend = conv.addend == nullptr ? nullptr
                        : residual.empty()     ? conv.addend->data<float>()
                                               : residual.data();
  std::vector<float> values(sums.size());
  for (int64_t pixel = 0; pixel < pixels; ++pixel) {
    for (int64_t channel = 0; channel < e.out_channels; ++channel) {
      float value = sums[pixel * e.out_channels + channel];
      if (!conv.bias.empty()) value += conv.bias[channel];
      if (addend != nullptr) value += addend[OutputIndex(e, pixel, channel, conv.addend_channels_last)];
      values[OutputIndex(e, pixel, channel, conv.y_channels_last)] = value;
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
