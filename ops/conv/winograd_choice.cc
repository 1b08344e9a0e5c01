#include "ops/conv/winograd_choice.h"

#include <atomic>

#include <dnnl.hpp>

#include "ops/common/onednn_utils.h"
#include "runtime/core/env_switch.h"

namespace onnx_amp {
namespace {

std::atomic<bool>& WinogradSetting() {
  static std::atomic<bool> setting{EnvSwitchOn("ONNX_AMP_CONV_WINOGRAD")};
  return setting;
}

// Channels from which a convolution takes the Winograd kernels. Measured on 2 AVX-512
// cores against the direct (brgemm) kernels, inference: 64 to 512 channels 2-3x faster
// at batch 32 (ResNet-18's 28x28 to 4x4 layers) and 1.3-1.8x at batch 1; 32 channels
// even; 16 channels or fewer 1.2-6x slower. Training (64 to 256 channels, batch 32-64,
// weights transformed on every call): forward, backward-data and backward-weights each
// 1.3-2x faster. The errors against a float64 reference stayed within 1.5x of the
// direct kernels' (2-3e-6 of the largest output at 64-512 channels).
constexpr int64_t kMinChannels = 64;

}  // namespace

bool WinogradApplies(int64_t in_channels, int64_t out_channels, int64_t group, const WindowGeometry& g) {
  return ConvUsesWinograd() && g.rank() == 2 && group == 1 && in_channels >= kMinChannels &&
         out_channels >= kMinChannels && g.kernel[0] == 3 && g.kernel[1] == 3 && g.strides[0] == 1 &&
         g.strides[1] == 1 && g.dilations[0] == 1 && g.dilations[1] == 1;
}

bool WinogradKernelsAvailable() {
  static const bool available = [] {
    const dnnl::memory::desc activation({1, kMinChannels, 8, 8}, dnnl::memory::data_type::f32,
                                        dnnl::memory::format_tag::any);
    const dnnl::memory::desc weights({kMinChannels, kMinChannels, 3, 3}, dnnl::memory::data_type::f32,
                                     dnnl::memory::format_tag::any);
    try {
      const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_winograd, activation, weights,
                                                 activation, {1, 1}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc(desc, dnn::CpuEngine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

std::string DescribeWinograd() {
  const std::string shapes = "3x3 stride-1 convolutions of " + std::to_string(kMinChannels) + "+ channels: ";
  if (!WinogradKernelsAvailable()) return shapes + "direct kernels (oneDNN has no Winograd kernels on this CPU)";
  if (!ConvUsesWinograd()) return shapes + "direct kernels (ONNX_AMP_CONV_WINOGRAD=0)";
  return shapes + "oneDNN's Winograd kernels (ONNX_AMP_CONV_WINOGRAD=0 turns them off)";
}

bool ConvUsesWinograd() { return WinogradSetting().load(std::memory_order_relaxed); }

bool SetConvUsesWinograd(bool use) { return WinogradSetting().exchange(use); }

}  // namespace onnx_amp
