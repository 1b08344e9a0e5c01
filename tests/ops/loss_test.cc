// The losses against hand-computed values: MeanSquaredError (domain ai.onnx_amp), and the
// sparse losses of domain ai.onnx_amp, which must give what ONNX's opset-13 ops of the
// same names give (the conformance suite checks those against the ONNX test data).
// Values are O(1) and each kernel rounds a float32 result once, so a few float32
// roundings (8u relative) bound the error.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/onnx_domain.h"
#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {
namespace {

constexpr double kBound = 8.0 / (1 << 24);

TEST(LossTest, MeanSquaredErrorIsTheMeanOfSquaredDifferences) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // (1 - 0)^2 + (2 - 2)^2 + (3 - 5)^2 + (4 - 4.5)^2 = 5.25, over 4 elements: 1.3125,
    // exact in every dtype.
    auto out = SingleNode("MeanSquaredError", 1, std::string(kOnnxAmpDomain))
                   .Input(MakeFloatTensor(dtype, {2, 2}, {1, 2, 3, 4}))
                   .Input(MakeFloatTensor(dtype, {2, 2}, {0, 2, 5, 4.5}))
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ((*out)[0].dtype(), dtype);
    EXPECT_EQ((*out)[0].shape(), Shape{});
    EXPECT_EQ(ToDoubles((*out)[0])[0], 1.3125) << DTypeName(dtype);
  }
}

TEST(LossTest, MeanSquaredErrorRejectsATargetOfAnotherShape) {
  auto out = SingleNode("MeanSquaredError", 1, std::string(kOnnxAmpDomain))
                 .Input(MakeFloatTensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4}))
                 .Input(MakeFloatTensor(DType::kFloat32, {4}, {1, 2, 3, 4}))
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("[4]"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("[2,2]"), std::string::npos) << out.status().message();
}

TEST(LossTest, SparseLossesOfBothDomainsMatchHandValues) {
  // Scores [[0, ln 3], [ln 2, 0]], labels [0, 0]: softmax picks 1/4 and 2/3, so the mean
  // cross-entropy is (ln 4 + ln 1.5) / 2. NLL of log-probabilities [[-0.5, -1.5],
  // [-2, -0.25]] at labels [1, 0] is (1.5 + 2) / 2.
  const Tensor scores = MakeFloatTensor(DType::kFloat32, {2, 2}, {0, std::log(3.0), std::log(2.0), 0});
  const Tensor log_prob = MakeFloatTensor(DType::kFloat32, {2, 2}, {-0.5, -1.5, -2, -0.25});
  const double want_cross_entropy = (std::log(4.0) + std::log(1.5)) / 2;
  for (const std::string& domain : std::vector<std::string>{"", std::string(kOnnxAmpDomain)}) {
    const int opset = domain.empty() ? 13 : 1;
    auto cross_entropy = SingleNode("SoftmaxCrossEntropyLoss", opset, domain)
                             .Input(scores)
                             .Input(MakeTensor<int64_t>({2}, {0, 0}))
                             .Run();
    auto nll = SingleNode("NegativeLogLikelihoodLoss", opset, domain)
                   .Input(log_prob)
                   .Input(MakeTensor<int64_t>({2}, {1, 0}))
                   .Run();
    ASSERT_TRUE(cross_entropy.ok()) << cross_entropy.status().message();
    ASSERT_TRUE(nll.ok()) << nll.status().message();
    EXPECT_NEAR(ToDoubles((*cross_entropy)[0])[0], want_cross_entropy, kBound * want_cross_entropy) << domain;
    EXPECT_NEAR(ToDoubles((*nll)[0])[0], 1.75, kBound * 1.75) << domain;
  }
}

}  // namespace
}  // namespace onnx_amp::testing
