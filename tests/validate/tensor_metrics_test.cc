// Metrics on small arrays whose values are worked out by hand in the comments.
#include "runtime/validate/tensor_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace onnx_amp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(TensorMetricsTest, HandComputedErrors) {
  const std::vector<double> r = {1.0, -2.0, 4.0, 0.0};
  const std::vector<double> c = {1.5, -2.0, 3.0, 0.0};
  const TensorMetrics m = CompareTensors(r, c, {0.1, 0.0}, 0);
  // abs = {0.5, 0, 1, 0}; rel = {0.5, 0, 0.25, 0}
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(m.max_rel_error, 0.5);
  EXPECT_DOUBLE_EQ(m.mean_rel_error, 0.75 / 4);
  // ||c-r|| = sqrt(1.25), ||r|| = sqrt(21)
  EXPECT_DOUBLE_EQ(m.rel_l2_error, std::sqrt(1.25 / 21.0));
  // <c,r> = 1.5 + 4 + 12 = 17.5, ||c|| = sqrt(2.25 + 4 + 9) = sqrt(15.25)
  EXPECT_DOUBLE_EQ(m.cosine_similarity, 17.5 / (std::sqrt(21.0) * std::sqrt(15.25)));
  // allowed = 0.1*|r| = {0.1, 0.2, 0.4, 0}: elements 0 and 2 violate; element 0 is worst (5x)
  EXPECT_EQ(m.violations, 2);
  EXPECT_EQ(m.worst_index, 0);
  EXPECT_DOUBLE_EQ(m.reference_max_abs, 4.0);
  EXPECT_DOUBLE_EQ(m.float16_headroom, 65504.0 / 4.0);
  EXPECT_FALSE(m.top1_agreement.has_value());
}

TEST(TensorMetricsTest, ZeroReferenceUsesTheScaleFloor) {
  // floor = 1e-6 * max|r| = 1e-6; a 1e-9 error on an exact zero is 1e-3 relative.
  const std::vector<double> r = {1.0, 0.0};
  const std::vector<double> c = {1.0, 1e-9};
  const TensorMetrics m = CompareTensors(r, c, {0.0, 1e-8}, 0);
  EXPECT_NEAR(m.max_rel_error, 1e-3, 1e-15);
  EXPECT_EQ(m.violations, 0);
}

TEST(TensorMetricsTest, NonFiniteValuesAreCountedAndMatchedByKind) {
  const std::vector<double> r = {kInf, kNan, 1.0, 2.0};
  const std::vector<double> c = {kInf, kNan, kInf, 2.0};
  const TensorMetrics m = CompareTensors(r, c, {1e-3, 0.0}, 0);
  EXPECT_EQ(m.reference_non_finite, 2);
  EXPECT_EQ(m.candidate_non_finite, 3);
  EXPECT_EQ(m.violations, 1);  // only the finite 1.0 that became inf
  EXPECT_EQ(m.worst_index, 2);
  EXPECT_FALSE(m.within_tolerance());
}

TEST(TensorMetricsTest, AllZeroTensorsAgree) {
  const std::vector<double> zeros(5, 0.0);
  const TensorMetrics m = CompareTensors(zeros, zeros, {0.0, 0.0}, 0);
  EXPECT_EQ(m.rel_l2_error, 0.0);
  EXPECT_EQ(m.cosine_similarity, 1.0);
  EXPECT_TRUE(std::isinf(m.float16_headroom));
  EXPECT_TRUE(m.within_tolerance());
}

TEST(TensorMetricsTest, TopKAgreementPerRow) {
  // Two rows of 6 classes. Row 0: same argmax (class 2). Row 1: reference argmax is
  // class 0, which the candidate ranks third -> in top-5, not top-1.
  const std::vector<double> r = {0, 1, 9, 2, 3, 4, /**/ 9, 1, 2, 3, 4, 5};
  const std::vector<double> c = {0, 1, 9, 2, 3, 4, /**/ 7, 1, 2, 3, 8, 9};
  const TensorMetrics m = CompareTensors(r, c, {1.0, 0.0}, 6);
  ASSERT_TRUE(m.top1_agreement && m.top5_agreement);
  EXPECT_DOUBLE_EQ(*m.top1_agreement, 0.5);
  EXPECT_DOUBLE_EQ(*m.top5_agreement, 1.0);
}

}  // namespace
}  // namespace onnx_amp
