// Resize (and Upsample): hand-derived linear and cubic weights, the coordinate modes,
// nearest modes, and float16/bfloat16 computed in float32 and rounded once.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/tensor/resize_plan.h"
#include "tests/ops/single_node_harness.h"
#include "tests/ops/tensor_test_util.h"

namespace onnx_amp::testing {
namespace {

// ---- Resize -------------------------------------------------------------------------

std::vector<double> ResizeValues(SingleNode node) { return ToDoubles(RunOne(node)); }

TEST(ResizeTest, LinearHalfPixelAndAlignCorners) {
  // [0, 4] upsampled x2. half_pixel maps outputs to -0.25, 0.25, 0.75, 1.25 (clamped
  // at the edges): 0, 1, 3, 4. align_corners maps them to 0, 1/3, 2/3, 1.
  const Tensor x = MakeTensor<float>({1, 2}, {0, 4});
  const Tensor scales = Floats({1, 2});
  const std::vector<double> half = ResizeValues(
      SingleNode("Resize", 13).Attr("mode", std::string("linear")).Input(x).Input(Tensor()).Input(scales));
  EXPECT_EQ(half, (std::vector<double>{0, 1, 3, 4}));
  const std::vector<double> corners =
      ResizeValues(SingleNode("Resize", 13).Attr("mode", std::string("linear"))
                       .Attr("coordinate_transformation_mode", std::string("align_corners"))
                       .Input(x).Input(Tensor()).Input(scales));
  ASSERT_EQ(corners.size(), 4u);
  const double tolerance = 4 * UnitRoundoff(DType::kFloat32) * 4;
  EXPECT_NEAR(corners[1], 4.0 / 3, tolerance);
  EXPECT_NEAR(corners[2], 8.0 / 3, tolerance);
  EXPECT_EQ(corners[0], 0);
  EXPECT_EQ(corners[3], 4);
}

TEST(ResizeTest, CubicWeightsByHand) {
  // x = [0, 1, 8, 27], asymmetric x2: output k reads input coordinate k / 2. At ratio
  // 0.5 with A = -0.75 the four weights are (-3/32, 19/32, 19/32, -3/32), so
  //   out[1] = 19/32 * (0 + 1) - 3/32 * (0 + 8) = -5/32  (tap -1 clamps to 0)
  //   out[3] = -3/32 * 0 + 19/32 * (1 + 8) - 3/32 * 27 = 90/32
  // and grid points are copied: out[2] = 1.
  const Tensor x = MakeTensor<float>({4}, {0, 1, 8, 27});
  const std::vector<double> y =
      ResizeValues(SingleNode("Resize", 13).Attr("mode", std::string("cubic"))
                       .Attr("coordinate_transformation_mode", std::string("asymmetric"))
                       .Input(x).Input(Tensor()).Input(Floats({2})));
  ASSERT_EQ(y.size(), 8u);
  const double tolerance = 64 * UnitRoundoff(DType::kFloat32);
  EXPECT_NEAR(y[1], -5.0 / 32, tolerance);
  EXPECT_NEAR(y[3], 90.0 / 32, tolerance);
  EXPECT_EQ(y[2], 1.0);
  // exclude_outside drops tap -1 and renormalises: (19/32 * 1 - 3/32 * 8) / (35/32) = -1/7.
  const std::vector<double> excluded =
      ResizeValues(SingleNode("Resize", 13).Attr("mode", std::string("cubic")).Attr("exclude_outside", int64_t{1})
                       .Attr("coordinate_transformation_mode", std::string("asymmetric"))
                       .Input(x).Input(Tensor()).Input(Floats({2})));
  EXPECT_NEAR(excluded[1], -1.0 / 7, tolerance);
  // cubic_coeff_a = -0.5 at ratio 0.5 gives (-1/16, 9/16, 9/16, -1/16): out[3] = 9/16 * 9 - 27/16.
  const std::vector<double> keys =
      ResizeValues(SingleNode("Resize", 13).Attr("mode", std::string("cubic")).Attr("cubic_coeff_a", -0.5f)
                       .Attr("coordinate_transformation_mode", std::string("asymmetric"))
                       .Input(x).Input(Tensor()).Input(Floats({2})));
  EXPECT_NEAR(keys[3], 81.0 / 16 - 27.0 / 16, tolerance);
}

TEST(ResizeTest, NearestModesSizesAndAspectPolicy) {
  // asymmetric x1.5 on 4 elements: outputs 0..5 read 0, 2/3, 4/3, 2, 8/3, 10/3.
  const Tensor x = MakeTensor<int32_t>({4}, {10, 11, 12, 13});
  auto nearest = [&](const std::string& mode) {
    return ToVector<int32_t>(RunOne(SingleNode("Resize", 13).Attr("nearest_mode", mode)
                                        .Attr("coordinate_transformation_mode", std::string("asymmetric"))
                                        .Input(x).Input(Tensor()).Input(Tensor()).Input(Int64s({6}))));
  };
  // sizes give scale 6/4 exactly.
  EXPECT_EQ(nearest("floor"), (std::vector<int32_t>{10, 10, 11, 12, 12, 13}));
  EXPECT_EQ(nearest("ceil"), (std::vector<int32_t>{10, 11, 12, 12, 13, 13}));
  EXPECT_EQ(nearest("round_prefer_floor"), (std::vector<int32_t>{10, 11, 11, 12, 13, 13}));
  // not_larger keeps the aspect ratio: sizes [4, 9] on a 2x3 input give scale 2 -> 4x6.
  const Tensor grid = MakeTensor<float>({2, 3}, Iota(6));
  const Tensor y = RunOne(SingleNode("Resize", 18).Attr("keep_aspect_ratio_policy", std::string("not_larger"))
                              .Input(grid).Input(Tensor()).Input(Tensor()).Input(Int64s({4, 9})));
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  // axes (opset 18): only axis 1 is resized.
  const Tensor z = RunOne(SingleNode("Resize", 18).Attr("axes", std::vector<int64_t>{1})
                              .Input(grid).Input(Tensor()).Input(Floats({2})));
  EXPECT_EQ(z.shape(), (Shape{2, 6}));
  EXPECT_EQ(ToVector<float>(z), (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
}

TEST(ResizeTest, UpsampleAndOpset10UseAsymmetricFloor) {
  const Tensor x = MakeTensor<float>({1, 2}, {1, 2});
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Upsample", 9).Input(x).Input(Floats({1, 3})))),
            (std::vector<float>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Upsample", 7).Attr("scales", std::vector<float>{1, 2}).Input(x))),
            (std::vector<float>{1, 1, 2, 2}));
  // Linear, asymmetric: outputs read 0, 0.5, 1, 1.5 -> 1, 1.5, 2, 2.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Resize", 10).Attr("mode", std::string("linear")).Input(x)
                                       .Input(Floats({1, 2})))),
            (std::vector<float>{1, 1.5f, 2, 2}));
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  // roi [0.5, 1.5] on [0, 10]: outputs at input coordinates 0.5, 1 (inside) and 1.5 (outside).
  const Tensor x = MakeTensor<float>({2}, {0, 10});
  const std::vector<double> y =
      ResizeValues(SingleNode("Resize", 13).Attr("mode", std::string("linear"))
                       .Attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
                       .Attr("extrapolation_value", -1.0f)
                       .Input(x).Input(Floats({0.5f, 1.5f})).Input(Tensor()).Input(Int64s({3})));
  EXPECT_EQ(y, (std::vector<double>{5, 10, -1}));
}

TEST(ResizeTest, LowPrecisionComputesInFloatAndRoundsOnce) {
  // Linear x3 on [1, 2] in float16: each output is the float32 result rounded once.
  const std::vector<double> values = {1.0, 2.0009765625};  // 2 + 2^-10, exact in float16
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const Tensor x_low = MakeFloatTensor(dtype, {2}, values);
    const Tensor y = RunOne(SingleNode("Resize", 13).Attr("mode", std::string("linear")).Input(x_low)
                                .Input(Tensor()).Input(Floats({3})));
    ASSERT_EQ(y.dtype(), dtype);
    // The float32 kernel on the same (already rounded) inputs, rounded once.
    const Tensor y32 = RunOne(SingleNode("Resize", 13).Attr("mode", std::string("linear"))
                                  .Input(MakeFloatTensor(DType::kFloat32, {2}, ToDoubles(x_low))).Input(Tensor())
                                  .Input(Floats({3})));
    const std::vector<float> expected = ToVector<float>(y32);
    ASSERT_EQ(static_cast<int64_t>(expected.size()), y.num_elements());
    for (size_t i = 0; i < expected.size(); ++i) {
      const uint16_t want = dtype == DType::kFloat16 ? Float16::FromFloat(expected[i]).bits
                                                     : BFloat16::FromFloat(expected[i]).bits;
      const uint16_t got = dtype == DType::kFloat16 ? y.data<Float16>()[i].bits : y.data<BFloat16>()[i].bits;
      EXPECT_EQ(got, want) << DTypeName(dtype) << " element " << i;
    }
  }
}

TEST(ResizePlanTest, CoordinateModes) {
  // in 4, out 8, scale 2, x = 3.
  EXPECT_DOUBLE_EQ(OriginalCoordinate(CoordinateMode::kHalfPixel, 3, 4, 8, 2.0, 0, 1), 1.25);
  EXPECT_DOUBLE_EQ(OriginalCoordinate(CoordinateMode::kAsymmetric, 3, 4, 8, 2.0, 0, 1), 1.5);
  EXPECT_DOUBLE_EQ(OriginalCoordinate(CoordinateMode::kAlignCorners, 3, 4, 8, 2.0, 0, 1), 3.0 * 3 / 7);
  EXPECT_DOUBLE_EQ(OriginalCoordinate(CoordinateMode::kPytorchHalfPixel, 0, 4, 1, 0.25, 0, 1), -0.5);
  // half_pixel_symmetric with in 5, scale 0.5 (out 2 of a nominal 2.5): offset 2.5 * (1 - 0.8) = 0.5.
  EXPECT_NEAR(OriginalCoordinate(CoordinateMode::kHalfPixelSymmetric, 0, 5, 2, 0.5, 0, 1), 0.5 + 1.0 - 0.5, 1e-12);
  // roi [0.25, 0.75] of 5 inputs, 3 outputs: 0.25 * 4 + x * 0.5 * 4 / 2.
  EXPECT_NEAR(OriginalCoordinate(CoordinateMode::kTfCropAndResize, 1, 5, 3, 0.6, 0.25, 0.75), 2.0, 1e-12);
}

}  // namespace
}  // namespace onnx_amp::testing
