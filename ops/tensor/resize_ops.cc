// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9). Nearest mode copies whole
// elements (bit-exact for every dtype); linear and cubic run as one separable pass per
// resized axis, innermost first as the ONNX reference does, accumulating in float32
// (float64 for double) and rounding once to the output dtype.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/common/dtype_dispatch.h"
#include "ops/tensor/resize_plan.h"
#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"
#include "runtime/core/convert.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

constexpr int64_t kElementsPerTask = 16 * 1024;

struct ResizeRequest {
  ResizeAxisOptions options;
  Shape out_shape;
  std::vector<double> scales;
  std::vector<double> roi;  // 2 * rank: starts then ends
  double extrapolation_value = 0.0;
};

Expected<ResizeMode> ParseMode(const KernelContext& context, bool upsample) {
  const std::string mode = context.attr_string("mode", "nearest");
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear" || mode == "bilinear") return ResizeMode::kLinear;
  if (mode == "cubic" && !upsample && context.opset() >= 11) return ResizeMode::kCubic;
  return context.Error(ErrorCode::kInvalidModel, "unknown mode '" + mode + "'");
}

Expected<CoordinateMode> ParseCoordinateMode(const KernelContext& context) {
  const std::string mode = context.attr_string("coordinate_transformation_mode", "half_pixel");
  if (mode == "half_pixel") return CoordinateMode::kHalfPixel;
  if (mode == "half_pixel_symmetric") return CoordinateMode::kHalfPixelSymmetric;
  if (mode == "pytorch_half_pixel") return CoordinateMode::kPytorchHalfPixel;
  if (mode == "align_corners") return CoordinateMode::kAlignCorners;
  if (mode == "asymmetric") return CoordinateMode::kAsymmetric;
  if (mode == "tf_crop_and_resize") return CoordinateMode::kTfCropAndResize;
  if (mode == "tf_half_pixel_for_nn") return CoordinateMode::kTfHalfPixelForNn;
  return context.Error(ErrorCode::kUnsupported, "coordinate_transformation_mode '" + mode + "' is not supported");
}

Expected<NearestMode> ParseNearestMode(const KernelContext& context) {
  const std::string mode = context.attr_string("nearest_mode", "round_prefer_floor");
  if (mode == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (mode == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  if (mode == "floor") return NearestMode::kFloor;
  if (mode == "ceil") return NearestMode::kCeil;
  return context.Error(ErrorCode::kInvalidModel, "unknown nearest_mode '" + mode + "'");
}

// An optional input counts as given only when it holds elements (opsets 11-12 pass an
// empty scales tensor next to sizes).
const Tensor* NonEmptyInput(const KernelContext& context, int index) {
  const Tensor* t = context.input(index);
  return t != nullptr && t->num_elements() > 0 ? t : nullptr;
}

// Output shape, per-axis scales and roi from the inputs and attributes of each opset.
Expected<ResizeRequest> ReadRequest(KernelContext& context, const Tensor& data, bool upsample) {
  const int64_t rank = data.rank();
  const bool modern = !upsample && context.opset() >= 11;
  ResizeRequest request;
  ONNX_AMP_ASSIGN_OR_RETURN(request.options.mode, ParseMode(context, upsample));
  if (modern) {
    ONNX_AMP_ASSIGN_OR_RETURN(request.options.coordinate_mode, ParseCoordinateMode(context));
    ONNX_AMP_ASSIGN_OR_RETURN(request.options.nearest_mode, ParseNearestMode(context));
    request.options.cubic_coeff_a = context.attr_float("cubic_coeff_a", -0.75f);
    request.options.exclude_outside = context.attr_int("exclude_outside", 0) != 0;
    request.extrapolation_value = context.attr_float("extrapolation_value", 0.0f);
    if (context.attr_int("antialias", 0) != 0) {
      return context.Error(ErrorCode::kUnsupported, "antialias is not supported");
    }
  } else {
    request.options.coordinate_mode = CoordinateMode::kAsymmetric;
    request.options.nearest_mode = NearestMode::kSimple;
  }

  std::vector<int64_t> axes;
  if (modern && context.opset() >= 18 && context.has_attribute("axes")) {
    ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, context.attr_ints("axes"), rank));
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  const size_t naxes = axes.size();

  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (upsample && context.opset() < 9) {
    const std::vector<float> attr = context.attr_floats("scales");
    scales.assign(attr.begin(), attr.end());
  } else if (const Tensor* s = NonEmptyInput(context, modern ? 2 : 1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(scales, ReadFloatList(context, *s, "scales"));
  }
  if (const Tensor* s = modern ? NonEmptyInput(context, 3) : nullptr) {
    if (!scales.empty()) return context.Error(ErrorCode::kInvalidModel, "only one of scales and sizes may be given");
    ONNX_AMP_ASSIGN_OR_RETURN(sizes, ReadInt64List(context, *s, "sizes"));
  }
  if (scales.empty() && sizes.empty()) return context.Error(ErrorCode::kInvalidModel, "scales or sizes is required");
  if ((!scales.empty() && scales.size() != naxes) || (!sizes.empty() && sizes.size() != naxes)) {
    return context.Error(ErrorCode::kInvalidModel, "scales/sizes need one entry per resized axis (" +
                                                       std::to_string(naxes) + ")");
  }

  request.out_shape = data.shape();
  request.scales.assign(rank, 1.0);
  if (!scales.empty()) {
    for (size_t i = 0; i < naxes; ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) {
        return context.Error(ErrorCode::kInvalidModel, "scales must be positive and finite");
      }
      request.scales[axes[i]] = scales[i];
      request.out_shape[axes[i]] =
          static_cast<int64_t>(std::floor(scales[i] * static_cast<double>(data.dim(axes[i]))));
    }
  } else {
    const std::string policy = modern ? context.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    std::vector<double> ratio(naxes);
    for (size_t i = 0; i < naxes; ++i) {
      if (sizes[i] < 0) return context.Error(ErrorCode::kInvalidModel, "sizes must be non-negative");
      ratio[i] = static_cast<double>(sizes[i]) / static_cast<double>(data.dim(axes[i]));
    }
    if (policy != "stretch") {
      if (policy != "not_larger" && policy != "not_smaller") {
        return context.Error(ErrorCode::kInvalidModel, "unknown keep_aspect_ratio_policy '" + policy + "'");
      }
      const double common = policy == "not_larger" ? *std::min_element(ratio.begin(), ratio.end())
                                                   : *std::max_element(ratio.begin(), ratio.end());
      for (size_t i = 0; i < naxes; ++i) {
        ratio[i] = common;
        // Rounds half up, as the specification writes it.
        sizes[i] = static_cast<int64_t>(common * static_cast<double>(data.dim(axes[i])) + 0.5);
      }
    }
    for (size_t i = 0; i < naxes; ++i) {
      request.scales[axes[i]] = ratio[i];
      request.out_shape[axes[i]] = sizes[i];
    }
  }

  request.roi.assign(2 * rank, 0.0);
  for (int64_t k = 0; k < rank; ++k) request.roi[rank + k] = 1.0;
  if (const Tensor* r = modern ? NonEmptyInput(context, 1) : nullptr;
      r != nullptr && request.options.coordinate_mode == CoordinateMode::kTfCropAndResize) {
    ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<double> roi, ReadFloatList(context, *r, "roi"));
    if (roi.size() != 2 * naxes) {
      return context.Error(ErrorCode::kInvalidModel, "roi needs " + std::to_string(2 * naxes) + " entries");
    }
    for (size_t i = 0; i < naxes; ++i) {
      request.roi[axes[i]] = roi[i];
      request.roi[rank + axes[i]] = roi[naxes + i];
    }
  }
  for (int64_t k = 0; k < rank; ++k) {
    if (data.dim(k) == 0 && request.out_shape[k] > 0) {
      return context.Error(ErrorCode::kInvalidModel, "cannot resize an empty axis");
    }
  }
  return request;
}

template <typename Acc>
std::vector<Acc> InterpolateAxis(ThreadPool& threads, const std::vector<Acc>& src, const Shape& shape, int64_t axis,
                                 const ResizeAxisPlan& plan, int64_t out_size, Acc extrapolation) {
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= shape[k];
  int64_t inner = 1;
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t in_size = shape[axis];
  std::vector<Acc> dst(static_cast<size_t>(outer * out_size * inner));
  const int taps = plan.taps;
  threads.ParallelFor(outer * out_size, ItemsPerChunk(inner, kElementsPerTask),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t row = begin; row < end; ++row) {
                          const int64_t o = row / out_size;
                          const int64_t x = row % out_size;
                          Acc* d = dst.data() + row * inner;
                          if (plan.outside[x]) {
                            std::fill(d, d + inner, extrapolation);
                            continue;
                          }
                          if (inner == 1) {
                            Acc sum = 0;
                            for (int t = 0; t < taps; ++t) {
                              const Acc w = static_cast<Acc>(plan.weight[x * taps + t]);
                              if (w != Acc(0)) sum += w * src[o * in_size + plan.index[x * taps + t]];
                            }
                            *d = sum;
                            continue;
                          }
                          std::fill(d, d + inner, Acc(0));
                          for (int t = 0; t < taps; ++t) {
                            const Acc w = static_cast<Acc>(plan.weight[x * taps + t]);
                            if (w == Acc(0)) continue;
                            const Acc* s = src.data() + (o * in_size + plan.index[x * taps + t]) * inner;
                            for (int64_t i = 0; i < inner; ++i) d[i] += w * s[i];
                          }
                        }
                      });
  return dst;
}

template <typename T, typename Acc>
Status Interpolate(KernelContext& context, const Tensor& data, const ResizeRequest& request,
                   const std::vector<ResizeAxisPlan>& plans, Tensor& out) {
  const int64_t count = data.num_elements();
  std::vector<Acc> values(count);
  const T* src = data.data<T>();
  if constexpr (std::is_same_v<T, Float16>) {
    ConvertHalfToFloat(reinterpret_cast<const uint16_t*>(src), values.data(), count);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    ConvertBFloat16ToFloat(reinterpret_cast<const uint16_t*>(src), values.data(), count);
  } else {
    for (int64_t i = 0; i < count; ++i) values[i] = static_cast<Acc>(src[i]);
  }
  Shape shape = data.shape();
  for (int64_t axis = data.rank() - 1; axis >= 0; --axis) {
    if (plans[axis].identity) continue;
    values = InterpolateAxis<Acc>(context.threads(), values, shape, axis, plans[axis], request.out_shape[axis],
                                  static_cast<Acc>(request.extrapolation_value));
    shape[axis] = request.out_shape[axis];
  }
  T* dst = out.data<T>();
  const int64_t out_count = out.num_elements();
  if constexpr (std::is_same_v<T, Float16>) {
    ConvertFloatToHalf(values.data(), reinterpret_cast<uint16_t*>(dst), out_count);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    ConvertFloatToBFloat16(values.data(), reinterpret_cast<uint16_t*>(dst), out_count);
  } else {
    for (int64_t i = 0; i < out_count; ++i) dst[i] = static_cast<T>(values[i]);
  }
  return Status::Ok();
}

Status ResizeOrUpsample(KernelContext& context, bool upsample) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const ResizeRequest request, ReadRequest(context, *data, upsample));
  const int64_t rank = data->rank();
  std::vector<ResizeAxisPlan> plans(rank);
  for (int64_t k = 0; k < rank; ++k) {
    plans[k] = PlanResizeAxis(request.options, data->dim(k), request.out_shape[k], request.scales[k],
                              request.roi[k], request.roi[rank + k]);
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), request.out_shape));
  if (out->num_elements() == 0) return Status::Ok();

  if (request.options.mode == ResizeMode::kNearest) {
    std::vector<std::vector<int64_t>> maps(rank);
    for (int64_t k = 0; k < rank; ++k) {
      maps[k] = plans[k].index;
      for (size_t x = 0; x < maps[k].size(); ++x) {
        if (plans[k].outside[x]) maps[k][x] = -1;
      }
    }
    Tensor fill = Tensor::Zeros(data->dtype(), {});
    ONNX_AMP_RETURN_IF_ERROR(StoreDouble(context, fill, 0, request.extrapolation_value));
    MappedCopy(context.threads(), DTypeSize(data->dtype()), data->shape(), data->raw_data(), request.out_shape, maps,
               out->raw_data(), fill.raw_data());
    return Status::Ok();
  }
  return DispatchDType<kMaskFloats>(context, data->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    return Interpolate<T, Acc>(context, *data, request, plans, *out);
  });
}

}  // namespace

Status ResizeKernel(KernelContext& context) { return ResizeOrUpsample(context, false); }

Status UpsampleKernel(KernelContext& context) { return ResizeOrUpsample(context, true); }

}  // namespace onnx_amp
