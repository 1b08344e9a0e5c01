// ONNX_AMP_MAX_CPU_ISA caps the instruction sets our kernels choose at run time, as
// ONEDNN_MAX_CPU_ISA caps oneDNN's (and, unless that is set too, it caps oneDNN's as well:
// ops/common/onednn_utils.cc). So an AVX-512 machine runs what an AVX2 one would, to
// compare the paths or reproduce a result; the element-wise loops chosen when the program
// loads (ops/common/cpu_clones.h) are the one exception. Values, widest first:
// avx512_bf16 (no cap, the default), avx512, avx2, baseline (x86-64 without AVX2).
#pragma once

#include <optional>
#include <string_view>

namespace onnx_amp {

enum class CpuIsa { kBaseline, kAvx2, kAvx512, kAvx512Bf16 };

// The value's level, or nothing for an unknown value (case is ignored).
std::optional<CpuIsa> ParseCpuIsa(std::string_view text);
std::string_view CpuIsaName(CpuIsa isa);

// The cap, read from the environment once; an unknown value is named on stderr
// ("onnx-amp: ONNX_AMP_MAX_CPU_ISA='...' is not ...; no cap") and caps nothing.
CpuIsa MaxCpuIsa();

// Whether kernels of `isa` may run (the CPU must still have it).
inline bool CpuIsaAllowed(CpuIsa isa) { return isa <= MaxCpuIsa(); }

}  // namespace onnx_amp
