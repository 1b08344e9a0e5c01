// The choice between oneDNN's native bfloat16 kernels and float32 kernels on widened
// operands (ops/common/bf16_kernel_choice.h): the setting, the measured rate, and which
// path a bfloat16 MatMul really took, told apart by a subnormal result: VDPBF16PS and
// VCVTNEPS2BF16 flush it to zero, the float32 path keeps it.
#include <cmath>

#include <gtest/gtest.h>

#include "runtime/core/cpu_isa_cap.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

TEST(Bf16KernelChoiceTest, ParsesTheThreeSettingsOnly) {
  EXPECT_EQ(ParseBf16Kernels("auto"), Bf16Kernels::kAuto);
  EXPECT_EQ(ParseBf16Kernels("native"), Bf16Kernels::kNative);
  EXPECT_EQ(ParseBf16Kernels("float32"), Bf16Kernels::kFloat32);
  EXPECT_EQ(ParseBf16Kernels("Native"), std::nullopt);
  EXPECT_EQ(ParseBf16Kernels(""), std::nullopt);
  for (Bf16Kernels kernels : {Bf16Kernels::kAuto, Bf16Kernels::kNative, Bf16Kernels::kFloat32}) {
    EXPECT_EQ(ParseBf16Kernels(Bf16KernelsName(kernels)), kernels);
  }
}

TEST(Bf16KernelChoiceTest, MeasuresARateOnlyWithAvx512Bf16) {
  __builtin_cpu_init();
  // ONNX_AMP_MAX_CPU_ISA below avx512_bf16 hides it (runtime/core/cpu_isa_cap.h).
  const bool has_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
                        CpuIsaAllowed(CpuIsa::kAvx512Bf16);
  const double speedup = Bf16DotSpeedup();
  if (!has_bf16) {
    EXPECT_EQ(speedup, 0.0);
    return;
  }
  // A VDPBF16PS does twice an FMA's multiply-adds; known CPUs retire it at a quarter
  // (Intel Xeons without AMX) to the full rate of FMA (AMD Zen 4), so 0.5x to 2x.
  EXPECT_TRUE(std::isfinite(speedup));
  EXPECT_GT(speedup, 0.2);
  EXPECT_LT(speedup, 4.0);
  EXPECT_EQ(Bf16DotSpeedup(), speedup) << "measured once per process";
}

TEST(Bf16KernelChoiceTest, SettingsDecideAndAutoFollowsTheRate) {
  const double compute_bound = 1024.0 * 4096 * 4096, weights = 4096.0 * 4096;
  {
    const ScopedBf16Kernels native(Bf16Kernels::kNative);
    EXPECT_TRUE(NativeBf16Pays(compute_bound, weights));
  }
  {
    const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
    EXPECT_FALSE(NativeBf16Pays(compute_bound, weights));
    EXPECT_FALSE(NativeBf16Pays(weights, weights));
  }
  const ScopedBf16Kernels automatic(Bf16Kernels::kAuto);
  EXPECT_EQ(NativeBf16Pays(compute_bound, weights), Bf16DotSpeedup() > 1.0);
  // One row per weight (batch-1 inference) is memory-bound: native reads half the bytes,
  // where the CPU has AVX512_BF16 (elsewhere oneDNN would emulate the products).
  EXPECT_EQ(NativeBf16Pays(weights, weights), Bf16DotSpeedup() > 0.0);
}

// 2^-63 * 2^-64 = 2^-127: below float32's smallest normal, a bfloat16 subnormal.
Expected<std::vector<Tensor>> SubnormalProduct() {
  const Tensor a = MakeFloatTensor(DType::kBFloat16, {1, 1}, {std::ldexp(1.0, -63)});
  const Tensor b = MakeFloatTensor(DType::kBFloat16, {1, 1}, {std::ldexp(1.0, -64)});
  return SingleNode("MatMul").Input(a).Input(b).Run();
}

TEST(Bf16KernelChoiceTest, Float32KernelsKeepSubnormalResults) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  auto out = SubnormalProduct();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToDoubles((*out)[0])[0], std::ldexp(1.0, -127));
}

TEST(Bf16KernelChoiceTest, NativeKernelsFlushSubnormalResults) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  auto out = SubnormalProduct();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToDoubles((*out)[0])[0], 0.0) << "the native path flushes; a kept subnormal means it did not run";
}

}  // namespace
}  // namespace onnx_amp::testing
