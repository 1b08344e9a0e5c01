#include "runtime/core/cpu_isa_cap.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace onnx_amp {
namespace {

constexpr const char* kVariable = "ONNX_AMP_MAX_CPU_ISA";
constexpr CpuIsa kAll[] = {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16};

CpuIsa ReadCap() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr || *value == '\0') return CpuIsa::kAvx512Bf16;
  if (const std::optional<CpuIsa> isa = ParseCpuIsa(value)) return *isa;
  std::fprintf(stderr, "onnx-amp: %s='%s' is not avx512_bf16, avx512, avx2 or baseline; no cap\n", kVariable, value);
  return CpuIsa::kAvx512Bf16;
}

}  // namespace

std::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline: return "baseline";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx512Bf16: return "avx512_bf16";
  }
  return "baseline";
}

std::optional<CpuIsa> ParseCpuIsa(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const CpuIsa isa : kAll) {
    if (lower == CpuIsaName(isa)) return isa;
  }
  return std::nullopt;
}

CpuIsa MaxCpuIsa() {
  static const CpuIsa cap = ReadCap();
  return cap;
}

}  // namespace onnx_amp
