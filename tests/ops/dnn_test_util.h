// Helpers for the linalg / conv / normalization kernel tests: seeded random data
// rounded to a dtype, and an element-wise check of |out - ref| against a per-element
// bound that each test derives from the dtype's unit roundoff and the op.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/few_rows_matmul.h"
#include "ops/conv/few_channels_conv.h"
#include "ops/conv/pool_2d.h"
#include "ops/conv/winograd_choice.h"
#include "runtime/core/dtype.h"
#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {

// Holds a kernel choice for a scope through its setter, which returns the previous
// choice, and restores that at the end (also when an assertion leaves the test early).
template <typename Choice, Choice (*kSet)(Choice)>
class ScopedChoice {
 public:
  explicit ScopedChoice(Choice choice) : previous_(kSet(choice)) {}
  ~ScopedChoice() { kSet(previous_); }
  ScopedChoice(const ScopedChoice&) = delete;
  ScopedChoice& operator=(const ScopedChoice&) = delete;

 private:
  Choice previous_;
};

// The bfloat16 kernel choice (ops/common/bf16_kernel_choice.h), so a test runs the native
// and the float32-kernel paths whatever the CPU would pick.
using ScopedBf16Kernels = ScopedChoice<Bf16Kernels, SetBf16Kernels>;
// The 2 x 2 max pools on their AVX-512 kernels or on the portable loops
// (ops/conv/pool_2d.h), so that an AVX-512 machine tests the path other CPUs take too.
using ScopedPool2x2Avx512 = ScopedChoice<bool, SetPool2x2UsesAvx512>;
// The few-rows product kernels (ops/common/few_rows_matmul.h) of one instruction set.
using ScopedFewRowsPath = ScopedChoice<FewRowsPath, SetFewRowsPath>;
// The first-layer convolution loops (ops/conv/few_channels_conv.h) of one instruction set.
using ScopedFewChannelsPath = ScopedChoice<FewChannelsPath, SetFewChannelsPath>;
// oneDNN's Winograd convolutions for the shapes that take them (ops/conv/winograd_choice.h).
using ScopedConvWinograd = ScopedChoice<bool, SetConvUsesWinograd>;

// Skips a test of oneDNN's native bfloat16 kernels where the CPU has no AVX512_BF16.
#define ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16()                                             \
  if (::onnx_amp::Bf16DotSpeedup() == 0.0) GTEST_SKIP() << "this CPU has no AVX512_BF16"

inline constexpr double kUnitF32 = 0x1p-24;

// Uniform values in [lo, hi).
inline std::vector<double> RandomValues(size_t count, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(count);
  for (double& v : values) v = dist(gen);
  return values;
}

// A tensor of `dtype` and the values it really holds (rounded once), as doubles.
struct RoundedTensor {
  Tensor tensor;
  std::vector<double> values;
};

inline RoundedTensor Rounded(DType dtype, const Shape& shape, const std::vector<double>& values) {
  RoundedTensor r;
  r.tensor = MakeFloatTensor(dtype, shape, values);
  r.values = ToDoubles(r.tensor);
  return r;
}

inline RoundedTensor RandomTensor(DType dtype, const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  return Rounded(dtype, shape, RandomValues(static_cast<size_t>(NumElements(shape)), seed, lo, hi));
}

// Half the smallest subnormal of a low-precision dtype: the absolute rounding error
// floor where the relative bound u*|ref| stops holding (float16 2^-25; 0 otherwise,
// since bfloat16 and float32 share float32's subnormal range, far below our data).
inline double AbsoluteFloor(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-25 : 0.0; }

// Expects |out[i] - ref[i]| <= bound[i] for every element; reports the worst element.
inline void ExpectWithin(const std::vector<double>& out, const std::vector<double>& ref,
                         const std::vector<double>& bound, const std::string& label) {
  ASSERT_EQ(out.size(), ref.size()) << label;
  ASSERT_EQ(bound.size(), ref.size()) << label;
  size_t failures = 0, worst = 0;
  double worst_ratio = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double error = std::abs(out[i] - ref[i]);
    const double ratio = bound[i] > 0 ? error / bound[i] : (error > 0 ? INFINITY : 0.0);
    if (!(error <= bound[i])) ++failures;
    if (ratio > worst_ratio || std::isnan(out[i])) worst_ratio = ratio, worst = i;
  }
  EXPECT_EQ(failures, 0u) << label << ": worst element " << worst << " out " << out[worst] << " ref " << ref[worst]
                          << " bound " << bound[worst];
}

}  // namespace onnx_amp::testing
