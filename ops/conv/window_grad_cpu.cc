// Gradients of the pools as direct loops: each output position's window is resolved
// once into input offsets (-1 for padding), then dY is routed back through it. The
// geometry comes from the forward attributes, resolved by ops/conv/window_geometry
// exactly as the forward kernels resolve them.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/window_geometry.h"

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
  WindowTable table;
};

Expected<PoolGradInputs> ReadPoolGradInputs(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  if (x->rank() < 3) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, spatial...]");
  ONNX_AMP_ASSIGN_OR_RETURN(const WindowGeometry g,
                            ForwardWindow(context, SpatialDims(x->shape()), {}, context.attr_int("ceil_mode", 0) != 0));
  ONNX_AMP_RETURN_IF_ERROR(CheckOutput(context, *dy, x->dim(0), x->dim(1), g));
  return PoolGradInputs{dy, x, BuildTable(g)};
}

}  // namespace

// Each dY goes to the first maximum of its window (the tap the forward kernel picks).
Status MaxPoolGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const PoolGradInputs in, ReadPoolGradInputs(context));
  const Tensor* dy = in.dy;
  const Tensor* x = in.x;
  const WindowTable& t = in.table;
  const std::vector<float> gv = ToFloat32(*dy);
  const std::vector<float> xv = ToFloat32(*x);
  std::vector<float> dx(xv.size(), 0.0f);
  const int64_t planes = x->dim(0) * x->dim(1);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* x_plane = xv.data() + plane * t.in_size;
    float* dx_plane = dx.data() + plane * t.in_size;
    for (int64_t o = 0; o < t.out_size; ++o) {
      int64_t best = -1;
      float best_value = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < t.kernel_size; ++k) {
        const int64_t offset = t.offsets[o * t.kernel_size + k];
        if (offset < 0) continue;
        const float value = x_plane[offset];
        if (best < 0 || value > best_value || (std::isnan(value) && !std::isnan(best_value))) {
          best = offset;
          best_value = value;
        }
      }
      if (best >= 0) dx_plane[best] += gv[plane * t.out_size + o];
    }
  }
  return WriteOutput(context, 0, dy->dtype(), x->shape(), dx);
}

// Each dY is spread evenly over its window's taps inside the input, divided by that
// count (or by the taps inside the padded input with count_include_pad).
Status AveragePoolGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const PoolGradInputs in, ReadPoolGradInputs(context));
  const Tensor* dy = in.dy;
  const Tensor* x = in.x;
  const WindowTable& t = in.table;
  const bool count_include_pad = context.attr_int("count_include_pad", 0) != 0;
  const std::vector<float> gv = ToFloat32(*dy);
  std::vector<float> dx(static_cast<size_t>(x->num_elements()), 0.0f);
  const int64_t planes = x->dim(0) * x->dim(1);
  for (int64_t plane = 0; plane < planes; ++plane) {
    float* dx_plane = dx.data() + plane * t.in_size;
    for (int64_t o = 0; o < t.out_size; ++o) {
      int64_t taps = 0;
      for (int64_t k = 0; k < t.kernel_size; ++k) taps += t.offsets[o * t.kernel_size + k] >= 0 ? 1 : 0;
      const int64_t divisor = count_include_pad ? t.padded_taps[o] : taps;
      if (divisor == 0) continue;
      const float share = gv[plane * t.out_size + o] / static_cast<float>(divisor);
      for (int64_t k = 0; k < t.kernel_size; ++k) {
        const int64_t offset = t.offsets[o * t.kernel_size + k];
        if (offset >= 0) dx_plane[offset] += share;
      }
    }
  }
  return WriteOutput(context, 0, dy->dtype(), x->shape(), dx);
}

}  // namespace onnx_amp
