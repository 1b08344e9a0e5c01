#include "ops/common/converting_relayout.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/common/onednn_utils.h"
#include "runtime/core/convert.h"
#include "runtime/core/cpu_isa_cap.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_TRANSPOSE_X86 1
#else
#define ONNX_AMP_TRANSPOSE_X86 0
#endif

namespace onnx_amp::dnn {
namespace {

using dt = dnnl::memory::data_type;

constexpr int64_t kGroup = 16;         // channels of a pixel group
constexpr int64_t kUnitPixels = 256;   // pixels per unit of work: 16 float32 rows of them fit in L1
constexpr int64_t kFlatGrain = int64_t{1} << 16;

bool IsLowPrecisionType(dt type) { return type == dt::f16 || type == dt::bf16; }

void Widen(dt type, const uint16_t* from, float* to, int64_t count) {
  if (type == dt::bf16) {
    ConvertBFloat16ToFloat(from, to, static_cast<size_t>(count));
  } else {
    ConvertHalfToFloat(from, to, static_cast<size_t>(count));
  }
}

void Round(dt type, const float* from, uint16_t* to, int64_t count) {
  if (type == dt::bf16) {
    ConvertFloatToBFloat16(from, to, static_cast<size_t>(count));
  } else {
    ConvertFloatToHalf(from, to, static_cast<size_t>(count));
  }
}

int64_t Product(const dnnl::memory::dims& dims, size_t first) {
  int64_t product = 1;
  for (size_t i = first; i < dims.size(); ++i) product *= dims[i];
  return product;
}

// A float32 [N, C, spatial...] layout holding 16 consecutive channels of a pixel
// together: element (n, c, s) at n * batch_stride + (c / 16) * group_stride + c % 16 +
// s * pixel_stride.
struct PixelGroups {
  int64_t batch_stride = 0, group_stride = 0, pixel_stride = 0;
};

std::optional<PixelGroups> PixelGroupsOf(const dnnl::memory::desc& md) {
  const dnnl::memory::dims dims = md.dims();
  if (dims.size() < 3 || dims.size() > 5 || dims[1] % kGroup != 0 || md.data_type() != dt::f32) return std::nullopt;
  const int64_t channels = dims[1], pixels = Product(dims, 2);
  if (md == ChannelBlockedDesc(dims, dt::f32)) return PixelGroups{channels * pixels, kGroup * pixels, kGroup};
  if (md == ActivationDesc(dims, dt::f32, true)) return PixelGroups{pixels * channels, kGroup, channels};
  return std::nullopt;
}

// Same dims, element order and padding, other data types.
bool SameOrder(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  return WithDataType(a, b.data_type()) == b;
}

// A dense layout: its bytes are exactly its elements.
bool Dense(const dnnl::memory::desc& md) {
  return md.get_size() == static_cast<size_t>(Product(md.dims(), 0)) * dnnl::memory::data_type_size(md.data_type());
}

// The low-precision type of a float32 <-> float16/bfloat16 pair; undef otherwise.
dt LowPrecisionOf(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from.data_type() == dt::f32 && IsLowPrecisionType(to.data_type())) return to.data_type();
  if (to.data_type() == dt::f32 && IsLowPrecisionType(from.data_type())) return from.data_type();
  return dt::undef;
}

}  // namespace

bool ConvertsBetween(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from.dims() != to.dims() || LowPrecisionOf(from, to) == dt::undef) return false;
  if (SameOrder(from, to)) return Dense(from);
  const dnnl::memory::desc& low = from.data_type() == dt::f32 ? to : from;
  const dnnl::memory::desc& wide = from.data_type() == dt::f32 ? from : to;
  return TransposesSupported() && low == PlainDesc(low.dims(), low.data_type()) && PixelGroupsOf(wide).has_value();
}

void ConvertBetween(const dnnl::memory::desc& from, const void* from_data, const dnnl::memory::desc& to,
                    void* to_data, int threads) {
  const dt low_type = LowPrecisionOf(from, to);
  const bool widening = from.data_type() != dt::f32;
  ThreadPool pool(threads);
  const dnnl::memory::dims dims = from.dims();
  if (SameOrder(from, to)) {
    pool.ParallelFor(Product(dims, 0), kFlatGrain, [&](int64_t begin, int64_t end) {
      if (widening) {
        Widen(low_type, static_cast<const uint16_t*>(from_data) + begin, static_cast<float*>(to_data) + begin, end - begin);
      } else {
        Round(low_type, static_cast<const float*>(from_data) + begin, static_cast<uint16_t*>(to_data) + begin, end - begin);
      }
    });
    return;
  }
#if ONNX_AMP_TRANSPOSE_X86
  // Units of 16 channels x up to kUnitPixels pixels of one image: each low-precision row
  // is converted through a float32 tile, which is transposed into (or out of) the
  // pixel groups.
  const PixelGroups groups = *PixelGroupsOf(widening ? to : from);
  const int64_t batch = dims[0], channels = dims[1], pixels = Product(dims, 2);
  const int64_t chunks = (pixels + kUnitPixels - 1) / kUnitPixels, channel_groups = channels / kGroup;
  pool.ParallelFor(batch * channel_groups * chunks, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> tile(static_cast<size_t>(kGroup * kUnitPixels));
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t chunk = unit % chunks, group = unit / chunks % channel_groups, n = unit / chunks / channel_groups;
      const int64_t first = chunk * kUnitPixels, count = std::min(kUnitPixels, pixels - first);
      const int64_t row = (n * channels + group * kGroup) * pixels + first;  // channel group's first row, row-major
      const int64_t grouped = n * groups.batch_stride + group * groups.group_stride + first * groups.pixel_stride;
      if (widening) {
        const uint16_t* rows = static_cast<const uint16_t*>(from_data) + row;
        for (int64_t c = 0; c < kGroup; ++c) Widen(low_type, rows + c * pixels, tile.data() + c * kUnitPixels, count);
        RowsToPixels16(tile.data(), kUnitPixels, count, static_cast<float*>(to_data) + grouped, groups.pixel_stride);
      } else {
        PixelsToRows16(static_cast<const float*>(from_data) + grouped, groups.pixel_stride, count, tile.data(),
                       kUnitPixels);
        uint16_t* rows = static_cast<uint16_t*>(to_data) + row;
        for (int64_t c = 0; c < kGroup; ++c) Round(low_type, tile.data() + c * kUnitPixels, rows + c * pixels, count);
      }
    }
  });
#endif
}

bool TransposesSupported() {
#if ONNX_AMP_TRANSPOSE_X86
  __builtin_cpu_init();
  return CpuIsaAllowed(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

}  // namespace onnx_amp::dnn
