// The coordinate arithmetic of Resize and Upsample, one axis at a time: for each output
// index, the input indices it reads (clamped to the axis, as the ONNX reference pads by
// edge) and their weights. Kept apart from the kernels so tests can check it directly.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace onnx_amp {

enum class ResizeMode { kNearest, kLinear, kCubic };

enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn,  // removed in opset 13: (x + 0.5) / scale
};

enum class NearestMode {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kFloor,
  kCeil,
  kSimple,  // Upsample and Resize-10: floor when enlarging, ceil when shrinking
};

struct ResizeAxisOptions {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateMode coordinate_mode = CoordinateMode::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
};

struct ResizeAxisPlan {
  int taps = 1;                 // 1 nearest, 2 linear, 4 cubic
  std::vector<int64_t> index;   // output size x taps, each in [0, input size)
  std::vector<double> weight;   // output size x taps
  std::vector<bool> outside;    // tf_crop_and_resize: output reads the extrapolation value
  bool identity = false;        // output[x] == input[x] for every x: the axis can be skipped
};

// The input coordinate that output index x maps to. `scale` is the axis' scale factor
// (output size / input size when sizes were given); roi applies to tf_crop_and_resize.
double OriginalCoordinate(CoordinateMode mode, int64_t x, int64_t in_size, int64_t out_size, double scale,
                          double roi_start, double roi_end);

ResizeAxisPlan PlanResizeAxis(const ResizeAxisOptions& options, int64_t in_size, int64_t out_size, double scale,
                              double roi_start, double roi_end);

}  // namespace onnx_amp
