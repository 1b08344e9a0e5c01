#include "ops/tensor/resize_plan.h"

#include <algorithm>
#include <cmath>

namespace onnx_amp {
namespace {

// Keys' cubic convolution weights for the four taps around a point at distance
// `ratio` in (0, 1] right of tap 1.
void CubicWeights(double ratio, double a, double* w) {
  const double r = ratio;
  const double s = 1.0 - ratio;
  w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

int64_t NearestOffset(NearestMode mode, double ratio, bool shrinking) {
  switch (mode) {
    case NearestMode::kRoundPreferFloor: return ratio <= 0.5 ? 0 : 1;
    case NearestMode::kRoundPreferCeil: return ratio < 0.5 ? 0 : 1;
    case NearestMode::kFloor: return 0;
    case NearestMode::kCeil: return 1;
    case NearestMode::kSimple: return shrinking ? 1 : 0;
  }
  return 0;
}

}  // namespace

double OriginalCoordinate(CoordinateMode mode, int64_t x, int64_t in_size, int64_t out_size, double scale,
                          double roi_start, double roi_end) {
  // As the ONNX reference: the "output width" is scale * input size, not rounded.
  const double out_width = scale * static_cast<double>(in_size);
  const double xd = static_cast<double>(x);
  const double in = static_cast<double>(in_size);
  switch (mode) {
    case CoordinateMode::kHalfPixel: return (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_size) / out_width;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (xd + 0.5) / scale - 0.5;
    }
    case CoordinateMode::kPytorchHalfPixel: return out_width == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kAlignCorners: return out_width == 1 ? 0.0 : xd * (in - 1) / (out_width - 1);
    case CoordinateMode::kAsymmetric: return xd / scale;
    case CoordinateMode::kTfHalfPixelForNn: return (xd + 0.5) / scale;
    case CoordinateMode::kTfCropAndResize: {
      const double start = roi_start * (in - 1);
      if (out_width == 1) return (roi_end - roi_start) * (in - 1) / 2 + start;
      return xd * (roi_end - roi_start) * (in - 1) / (out_width - 1) + start;
    }
  }
  return xd;
}

ResizeAxisPlan PlanResizeAxis(const ResizeAxisOptions& options, int64_t in_size, int64_t out_size, double scale,
                              double roi_start, double roi_end) {
  ResizeAxisPlan plan;
  switch (options.mode) {
    case ResizeMode::kNearest: plan.taps = 1; break;
    case ResizeMode::kLinear: plan.taps = 2; break;
    case ResizeMode::kCubic: plan.taps = 4; break;
  }
  const int taps = plan.taps;
  plan.index.assign(out_size * taps, 0);
  plan.weight.assign(out_size * taps, 0.0);
  plan.outside.assign(out_size, false);
  plan.identity = in_size == out_size;
  for (int64_t x = 0; x < out_size; ++x) {
    const double original =
        OriginalCoordinate(options.coordinate_mode, x, in_size, out_size, scale, roi_start, roi_end);
    if (options.coordinate_mode == CoordinateMode::kTfCropAndResize &&
        (original < 0 || original > static_cast<double>(in_size - 1))) {
      plan.outside[x] = true;
      plan.identity = false;
      continue;
    }
    // The base tap sits left of the point, at distance ratio in (0, 1].
    const double floored = std::floor(original);
    const bool on_grid = original == floored;
    const int64_t base = static_cast<int64_t>(floored) - (on_grid ? 1 : 0);
    const double ratio = original - static_cast<double>(base);
    int64_t* index = &plan.index[x * taps];
    double* weight = &plan.weight[x * taps];
    switch (options.mode) {
      case ResizeMode::kNearest:
        index[0] = on_grid ? base + 1 : base + NearestOffset(options.nearest_mode, ratio, scale < 1.0);
        weight[0] = 1.0;
        break;
      case ResizeMode::kLinear:
        index[0] = base;
        index[1] = base + 1;
        weight[0] = 1.0 - ratio;
        weight[1] = ratio;
        break;
      case ResizeMode::kCubic:
        for (int t = 0; t < 4; ++t) index[t] = base - 1 + t;
        CubicWeights(ratio, options.cubic_coeff_a, weight);
        break;
    }
    if (options.exclude_outside && taps > 1) {
      double sum = 0.0;
      for (int t = 0; t < taps; ++t) {
        if (index[t] < 0 || index[t] >= in_size) weight[t] = 0.0;
        sum += weight[t];
      }
      for (int t = 0; t < taps; ++t) weight[t] /= sum;
    }
    for (int t = 0; t < taps; ++t) {
      index[t] = std::clamp<int64_t>(index[t], 0, in_size - 1);
      if (weight[t] != 0.0 && (weight[t] != 1.0 || index[t] != x)) plan.identity = false;
    }
  }
  return plan;
}

}  // namespace onnx_amp
