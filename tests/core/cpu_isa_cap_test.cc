// ONNX_AMP_MAX_CPU_ISA's values (runtime/core/cpu_isa_cap.h): the four levels by name in
// any case, widest last, and nothing for anything else. What the cap does to the kernels
// chosen is checked through `onnx-amp --version` (tests/cli/inspect_test.py).
#include <gtest/gtest.h>

#include "runtime/core/cpu_isa_cap.h"

namespace onnx_amp {
namespace {

TEST(CpuIsaCapTest, NamesParseToTheirLevels) {
  for (const CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
    EXPECT_EQ(ParseCpuIsa(CpuIsaName(isa)), isa) << CpuIsaName(isa);
  }
  EXPECT_EQ(ParseCpuIsa("AVX2"), CpuIsa::kAvx2);
  EXPECT_EQ(ParseCpuIsa("Avx512_BF16"), CpuIsa::kAvx512Bf16);
  EXPECT_LT(CpuIsa::kBaseline, CpuIsa::kAvx2);
  EXPECT_LT(CpuIsa::kAvx2, CpuIsa::kAvx512);
  EXPECT_LT(CpuIsa::kAvx512, CpuIsa::kAvx512Bf16);
}

TEST(CpuIsaCapTest, OtherValuesParseToNothing) {
  for (const char* value : {"", "sse4", "avx", "avx512-bf16", " avx2", "avx2 ", "amx"}) {
    EXPECT_FALSE(ParseCpuIsa(value).has_value()) << "'" << value << "'";
  }
}

}  // namespace
}  // namespace onnx_amp
