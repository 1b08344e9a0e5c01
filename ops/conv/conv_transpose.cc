// ConvTranspose (1-D/2-D/3-D, groups, dilations, pads, output_padding, output_shape,
// auto_pad) as a plain scatter loop: each input pixel adds its weighted kernel into
// the output. Low-precision inputs are widened to float32, accumulated in float32 and
// rounded once.
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/window_geometry.h"

namespace onnx_amp {
namespace {

template <typename T>
std::vector<ComputeType<T>> Widen(const Tensor& tensor) {
  const T* data = tensor.data<T>();
  std::vector<ComputeType<T>> values(static_cast<size_t>(tensor.num_elements()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = LoadValue(data[i]);
  return values;
}

template <typename T>
Status RunConvTranspose(const Tensor& x_tensor, const Tensor& w_tensor, const Tensor* b_tensor, int64_t group,
                        const WindowGeometry& g, Tensor& y_tensor) {
  using Acc = ComputeType<T>;
  const std::vector<Acc> x = Widen<T>(x_tensor), w = Widen<T>(w_tensor);
  const int64_t batch = x_tensor.dim(0), in_channels = x_tensor.dim(1);
  const int64_t in_per_group = in_channels / group, out_per_group = w_tensor.dim(1);
  const int64_t out_channels = out_per_group * group;
  const size_t rank = g.rank();
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  for (size_t i = 0; i < rank; ++i) in_size *= g.in[i], out_size *= g.out[i], kernel_size *= g.kernel[i];

  std::vector<Acc> y(static_cast<size_t>(y_tensor.num_elements()), Acc(0));
  if (b_tensor != nullptr) {
    const std::vector<Acc> b = Widen<T>(*b_tensor);
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t oc = 0; oc < out_channels; ++oc) {
        std::fill_n(y.begin() + (n * out_channels + oc) * out_size, out_size, b[oc]);
      }
    }
  }
  // Output offset of every (input pixel, kernel tap) pair, -1 where it falls outside.
  std::vector<int64_t> target(static_cast<size_t>(in_size * kernel_size));
  std::vector<int64_t> i_index(rank), k_index(rank);
  for (int64_t p = 0; p < in_size; ++p) {
    for (int64_t rest = p, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) i_index[i] = rest % g.in[i], rest /= g.in[i];
    for (int64_t k = 0; k < kernel_size; ++k) {
      for (int64_t rest = k, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
        k_index[i] = rest % g.kernel[i], rest /= g.kernel[i];
      }
      int64_t offset = 0;
      for (size_t i = 0; i < rank && offset >= 0; ++i) {
        const int64_t pos = i_index[i] * g.strides[i] - g.pads_begin[i] + k_index[i] * g.dilations[i];
        offset = (pos < 0 || pos >= g.out[i]) ? -1 : offset * g.out[i] + pos;
      }
      target[p * kernel_size + k] = offset;
    }
  }
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t ic = 0; ic < in_channels; ++ic) {
      const int64_t grp = ic / in_per_group;
      const Acc* x_plane = x.data() + (n * in_channels + ic) * in_size;
      for (int64_t oc = 0; oc < out_per_group; ++oc) {
        Acc* y_plane = y.data() + (n * out_channels + grp * out_per_group + oc) * out_size;
        const Acc* w_kernel = w.data() + (ic * out_per_group + oc) * kernel_size;
        for (int64_t p = 0; p < in_size; ++p) {
          const Acc value = x_plane[p];
          const int64_t* targets = target.data() + p * kernel_size;
          for (int64_t k = 0; k < kernel_size; ++k) {
            if (targets[k] >= 0) y_plane[targets[k]] += value * w_kernel[k];
          }
        }
      }
    }
  }
  T* out = y_tensor.data<T>();
  for (size_t i = 0; i < y.size(); ++i) out[i] = StoreValue<T>(y[i]);
  return Status::Ok();
}

}  // namespace

Status ConvTransposeCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  const Tensor* w = context.input(1);
  const Tensor* b = context.input(2);
  if (x == nullptr || w == nullptr) return context.Error(ErrorCode::kInvalidModel, "ConvTranspose needs inputs X and W");
  if (x->rank() < 3 || w->rank() != x->rank()) {
    return context.Error(ErrorCode::kInvalidModel, "X " + ShapeToString(x->shape()) + " and W " +
                                                       ShapeToString(w->shape()) + " do not fit");
  }
  if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "X, W and B have different dtypes");
  }
  const int64_t group = context.attr_int("group", 1);
  if (group < 1 || x->dim(1) != w->dim(0) || x->dim(1) % group != 0) {
    return context.Error(ErrorCode::kInvalidModel, "channels do not match group " + std::to_string(group));
  }
  const int64_t out_channels = w->dim(1) * group;
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != out_channels)) {
    return context.Error(ErrorCode::kInvalidModel, "B must have shape [" + std::to_string(out_channels) + "]");
  }
  const Shape spatial(x->shape().begin() + 2, x->shape().end());
  const std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(WindowGeometry g, TransposedWindow(context, spatial, kernel));
  if (g.kernel != kernel) return context.Error(ErrorCode::kInvalidModel, "kernel_shape differs from W");
  Shape y_shape{x->dim(0), out_channels};
  y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    return RunConvTranspose<decltype(tag)>(*x, *w, b, group, g, *y);
  });
}

}  // namespace onnx_amp
