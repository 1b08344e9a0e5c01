#include "ops/conv/pool_2d.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common/float_compute.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Outputs per parallel chunk: waking a thread for less costs more than it saves.
constexpr int64_t kOutputsPerChunk = 1 << 14;

// The taps [begin, end) of output `o` along one axis that lie inside the input, and
// how many lie inside the padded input.
struct TapRange {
  int64_t begin, end, padded;
};

TapRange Taps(const WindowGeometry& g, size_t axis, int64_t o) {
  const int64_t start = o * g.strides[axis] - g.pads_begin[axis];
  const int64_t stop = start + g.kernel[axis];
  const int64_t padded = std::min(stop, g.in[axis] + g.pads_end[axis]) - std::max(start, -g.pads_begin[axis]);
  return {std::max<int64_t>(start, 0), std::min(stop, g.in[axis]), padded};
}

template <typename T>
void PoolPlanes(const T* in, T* out, const WindowGeometry& g, bool max, bool count_include_pad, int64_t begin,
                int64_t end) {
  using Acc = ComputeType<T>;
  const int64_t in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  for (int64_t plane = begin; plane < end; ++plane) {
    const T* x = in + plane * in_h * in_w;
    T* y = out + plane * out_h * out_w;
    for (int64_t oh = 0; oh < out_h; ++oh) {
      const TapRange rows = Taps(g, 0, oh);
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const TapRange cols = Taps(g, 1, ow);
        Acc result;
        if (max) {
          result = -std::numeric_limits<Acc>::infinity();
          bool first = true;
          for (int64_t h = rows.begin; h < rows.end; ++h) {
            for (int64_t w = cols.begin; w < cols.end; ++w) {
              const Acc value = LoadValue(x[h * in_w + w]);
              if (first || value > result || (std::isnan(value) && !std::isnan(result))) result = value;
              first = false;
            }
          }
        } else {
          Acc sum = 0;
          for (int64_t h = rows.begin; h < rows.end; ++h) {
            for (int64_t w = cols.begin; w < cols.end; ++w) sum += LoadValue(x[h * in_w + w]);
          }
          const int64_t inside = std::max<int64_t>(rows.end - rows.begin, 0) * std::max<int64_t>(cols.end - cols.begin, 0);
          result = sum / static_cast<Acc>(count_include_pad ? rows.padded * cols.padded : inside);
        }
        y[oh * out_w + ow] = StoreValue<T>(result);
      }
    }
  }
}

}  // namespace

bool Pool2dApplies(const WindowGeometry& g) { return g.rank() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1; }

Status Pool2d(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool max, bool count_include_pad,
              Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t grain = std::max<int64_t>(1, kOutputsPerChunk / std::max<int64_t>(1, g.out[0] * g.out[1]));
  return DispatchFloat(context, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    context.threads().ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      PoolPlanes(in, out, g, max, count_include_pad, begin, end);
    });
    return Status::Ok();
  });
}

}  // namespace onnx_amp
