// Gradients of the pools as direct loops: each output position's window is resolved
// once into input offsets (-1 for padding), then dY is routed back through it. The
// geometry comes from the forward attributes, resolved by ops/conv/window_geometry
// exactly as the forward kernels resolve them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_compute.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/pool_2d.h"
#include "ops/conv/window_geometry.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

struct WindowTable {
  int64_t in_size = 1;      // input positions per plane
  int64_t out_size = 1;     // output positions per plane
  int64_t kernel_size = 1;  // taps per window
  // offsets[o * kernel_size + k]: input offset in the plane, -1 outside the input.
  std::vector<int64_t> offsets;
  // Taps inside the padded input, per output position (AveragePool count_include_pad).
  std::vector<int64_t> padded_taps;
};

WindowTable BuildTable(const WindowGeometry& g) {
  WindowTable t;
  const size_t rank = g.rank();
  for (size_t i = 0; i < rank; ++i) {
    t.in_size *= g.in[i];
    t.out_size *= g.out[i];
    t.kernel_size *= g.kernel[i];
  }
  t.offsets.assign(static_cast<size_t>(t.out_size * t.kernel_size), -1);
  t.padded_taps.assign(static_cast<size_t>(t.out_size), 0);
  std::vector<int64_t> o_index(rank);
  for (int64_t o = 0; o < t.out_size; ++o) {
    for (int64_t rest = o, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
      o_index[i] = rest % g.out[i];
      rest /= g.out[i];
    }
    t.padded_taps[o] = ForEachWindowTap(g, o_index.data(), [&](int64_t k, int64_t offset) {
      t.offsets[o * t.kernel_size + k] = offset;
    });
  }
  return t;
}

Shape SpatialDims(const Shape& shape) { return Shape(shape.begin() + 2, shape.end()); }

// Checks dY against the forward output shape the geometry implies.
Status CheckOutput(const KernelContext& context, const Tensor& dy, int64_t n, int64_t channels,
                   const WindowGeometry& g) {
  Shape expected = {n, channels};
  expected.insert(expected.end(), g.out.begin(), g.out.end());
  if (dy.shape() != expected) {
    return context.Error(ErrorCode::kInvalidModel,
                         "dY is " + ShapeToString(dy.shape()) + ", the forward output is " + ShapeToString(expected));
  }
  return Status::Ok();
}

// dY and X of a pool gradient (inputs 0 and 1), with the window table of the pool the
// forward attributes describe; dY checked against its output shape.
struct PoolGradInputs {
  const Tensor* dy;
  const Tensor* x;
  WindowGeometry geometry;
  WindowTable table;
};

Expected<PoolGradInputs> ReadPoolGradInputs(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  if (x->rank() < 3) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, spatial...]");
  ONNX_AMP_ASSIGN_OR_RETURN(const WindowGeometry g,
                            ForwardWindow(context, SpatialDims(x->shape()), {}, context.attr_int("ceil_mode", 0) != 0));
  ONNX_AMP_RETURN_IF_ERROR(CheckOutput(context, *dy, x->dim(0), x->dim(1), g));
  return PoolGradInputs{dy, x, g, BuildTable(g)};
}

// dx[i] * ReluSlope(x[i]) for a plane, as a ReluGrad reading dX after a MaxPoolGrad
// gives it: a float16/bfloat16 dX is rounded first, as that MaxPoolGrad stores it.
void ApplyReluSlope(const float* x, DType dx_dtype, int64_t count, float* dx) {
  if (IsLowPrecision(dx_dtype)) RoundThrough(dx_dtype, dx, dx, count);
  const ReluSlope slope;
  for (int64_t i = 0; i < count; ++i) dx[i] *= slope(x[i]);
}

// Runs plane_grad(dy, x, dx) on every [N, C] plane, planes in parallel chunks: dY and X
// come as float32 (X only when `x_needed`), dX is a float32 plane, zeroed to accumulate
// into unless plane_grad writes every element (`writes_whole_plane`), multiplied by the
// Relu's slope at X with `relu_slope` (a folded ReluGrad plane_grad does not apply
// itself), written in place for a float32 dX and rounded once into a float16/bfloat16 one.
template <typename PlaneGrad>
Status ForEachPlane(KernelContext& context, const PoolGradInputs& in, bool x_needed, PlaneGrad plane_grad,
                    bool writes_whole_plane = false, bool relu_slope = false) {
  if (!context.output_used(0)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, in.dy->dtype(), in.x->shape()));
  const WindowTable& t = in.table;
  const int64_t planes = in.x->dim(0) * in.x->dim(1);
  // Chunks of at least ~16K elements: waking a thread for less costs more than it saves.
  const int64_t grain = ItemsPerChunk(t.in_size, int64_t{1} << 14);
  context.threads().ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
    Float32BlockReader dy_planes(*in.dy, t.out_size), x_planes(*in.x, x_needed ? t.in_size : 0);
    std::vector<float> dx_buffer(static_cast<size_t>(dx->dtype() == DType::kFloat32 ? 0 : t.in_size));
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dx_plane = dx->dtype() == DType::kFloat32 ? dx->data<float>() + plane * t.in_size : dx_buffer.data();
      if (!writes_whole_plane) std::fill_n(dx_plane, t.in_size, 0.0f);
      const float* x_plane = x_needed ? x_planes.Read(plane * t.in_size) : nullptr;
      plane_grad(dy_planes.Read(plane * t.out_size), x_plane, dx_plane);
      if (relu_slope) ApplyReluSlope(x_plane, dx->dtype(), t.in_size, dx_plane);
      if (dx_plane == dx_buffer.data()) StoreFloat32Block(dx_plane, plane * t.in_size, t.in_size, *dx);
    }
  });
  return Status::Ok();
}

}  // namespace

// Each dY goes to the first maximum of its window (the tap the forward kernel picks);
// with a ReluGrad folded in (KernelContext::fused_relu_grad), dX is then multiplied by
// the slope of the Relu whose output X is. X and dX may be stored channels-last, and dY
// either way.
Status MaxPoolGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const PoolGradInputs in, ReadPoolGradInputs(context));
  const WindowTable& t = in.table;
  const bool relu_slope = context.fused_relu_grad();
  if (context.input_channels_last(1)) {
    if (!context.output_used(0)) return Status::Ok();
    if (!context.output_channels_last(0)) return context.Error(ErrorCode::kInternal, "X is channels-last, dX is not");
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, in.dy->dtype(), in.x->shape()));
    return MaxPoolGradChannelsLast(context, *in.dy, context.input_channels_last(0), *in.x, in.geometry, relu_slope,
                                   *dx);
  }
  if (Tiles2x2(in.geometry)) {
    // The kernel applies the slope itself, to the one dY of each window: every dX is dY
    // or a zero, which rounding leaves alone, so no dtype needs the rounding first.
    const auto plane_grad = [&in, relu_slope](const float* dy, const float* x, float* dx) {
      MaxPool2x2GradPlane(x, dy, in.geometry, relu_slope, dx);
    };
    return ForEachPlane(context, in, true, plane_grad, /*writes_whole_plane=*/true);
  }
  if (Pool2dApplies(in.geometry) && t.in_size < (int64_t{1} << 31)) {
    // The 2-D pools of CNNs: the forward kernel's own vectorised search finds each tap.
    const PlaneWindows windows = ResolveWindows(in.geometry);
    return ForEachPlane(context, in, true, [&in, &windows](const float* dy, const float* x, float* dx) {
      thread_local std::vector<int64_t> argmax;
      argmax.resize(static_cast<size_t>(in.table.out_size));
      MaxPool2dArgmax(x, in.geometry, windows, argmax.data());
      for (int64_t o = 0; o < in.table.out_size; ++o) {
        if (argmax[o] >= 0) dx[argmax[o]] += dy[o];
      }
    }, /*writes_whole_plane=*/false, relu_slope);
  }
  return ForEachPlane(context, in, true, [&t](const float* dy, const float* x, float* dx) {
    for (int64_t o = 0; o < t.out_size; ++o) {
      const int64_t* offsets = t.offsets.data() + o * t.kernel_size;
      int64_t best = -1;
      float best_value = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < t.kernel_size; ++k) {
        const int64_t offset = offsets[k];
        if (offset < 0) continue;
        const float value = x[offset];
        if (best < 0 || value > best_value || (std::isnan(value) && !std::isnan(best_value))) {
          best = offset;
          best_value = value;
        }
      }
      if (best >= 0) dx[best] += dy[o];
    }
  }, /*writes_whole_plane=*/false, relu_slope);
}

// Each dY is spread evenly over its window's taps inside the input, divided by that
// count (or by the taps inside the padded input with count_include_pad).
Status AveragePoolGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const PoolGradInputs in, ReadPoolGradInputs(context));
  const WindowTable& t = in.table;
  const bool count_include_pad = context.attr_int("count_include_pad", 0) != 0;
  return ForEachPlane(context, in, false, [&t, count_include_pad](const float* dy, const float*, float* dx) {
    for (int64_t o = 0; o < t.out_size; ++o) {
      const int64_t* offsets = t.offsets.data() + o * t.kernel_size;
      int64_t taps = 0;
      for (int64_t k = 0; k < t.kernel_size; ++k) taps += offsets[k] >= 0 ? 1 : 0;
      const int64_t divisor = count_include_pad ? t.padded_taps[o] : taps;
      if (divisor == 0) continue;
      const float share = dy[o] / static_cast<float>(divisor);
      for (int64_t k = 0; k < t.kernel_size; ++k) {
        if (offsets[k] >= 0) dx[offsets[k]] += share;
      }
    }
  });
}

}  // namespace onnx_amp
