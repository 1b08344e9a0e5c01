// Generated validation samples: declared shapes, per-input ranges, reproducible seeds.
#include "runtime/validate/sample_inputs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onnx_amp {
namespace {

InputSpec Spec(const std::string& name, DType dtype) {
  InputSpec spec;
  spec.name = name;
  spec.dtype = dtype;
  spec.has_shape = true;
  spec.dims = {-1, 64};
  spec.dim_params = {"batch", ""};
  return spec;
}

TEST(SampleInputsTest, RangesAndDefaults) {
  const std::vector<InputSpec> inputs = {Spec("tokens", DType::kInt64), Spec("mask", DType::kFloat32),
                                         Spec("x", DType::kFloat32)};
  RandomSampleOptions options;
  options.samples = 3;
  options.seed = 5;
  options.dim_sizes = {{"batch", 2}};
  options.ranges = {{"tokens", {0, 1000, true}}, {"mask", {0, 2, true}}};
  Expected<std::vector<Feeds>> samples = RandomSamples(inputs, options);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->size(), 3u);
  int64_t large_tokens = 0;
  for (const Feeds& feeds : *samples) {
    const Tensor& tokens = feeds.at("tokens");
    ASSERT_EQ(tokens.shape(), (Shape{2, 64}));
    for (int64_t i = 0; i < tokens.num_elements(); ++i) {
      const int64_t t = tokens.data<int64_t>()[i];
      EXPECT_TRUE(t >= 0 && t < 1000);
      large_tokens += t >= 10;
    }
    const Tensor& mask = feeds.at("mask");
    for (int64_t i = 0; i < mask.num_elements(); ++i) {
      const float m = mask.data<float>()[i];
      EXPECT_TRUE(m == 0.0f || m == 1.0f);
    }
    const Tensor& x = feeds.at("x");  // the default: uniform in [-1, 1)
    for (int64_t i = 0; i < x.num_elements(); ++i) EXPECT_TRUE(x.data<float>()[i] >= -1.0f && x.data<float>()[i] < 1.0f);
  }
  EXPECT_GT(large_tokens, 0);  // the range reaches beyond the default [0, 10)

  Expected<std::vector<Feeds>> again = RandomSamples(inputs, options);
  ASSERT_TRUE(again.ok());
  const Tensor& a = (*samples)[2].at("x");
  const Tensor& b = (*again)[2].at("x");
  for (int64_t i = 0; i < a.num_elements(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]);
}

TEST(SampleInputsTest, RejectsBadRequests) {
  const std::vector<InputSpec> inputs = {Spec("x", DType::kFloat32)};
  RandomSampleOptions options;
  options.dim_sizes = {{"batch", 1}};
  options.ranges = {{"y", {0, 1, false}}};
  EXPECT_EQ(RandomSamples(inputs, options).status().code(), ErrorCode::kInvalidArgument);
  options.ranges = {{"x", {1, 1, false}}};
  EXPECT_EQ(RandomSamples(inputs, options).status().code(), ErrorCode::kInvalidArgument);
  options.ranges.clear();
  options.dim_sizes.clear();
  EXPECT_EQ(RandomSamples(inputs, options).status().code(), ErrorCode::kInvalidArgument);  // 'batch' unresolved
}

}  // namespace
}  // namespace onnx_amp
