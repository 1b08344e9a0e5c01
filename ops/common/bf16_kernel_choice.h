// Whether a bfloat16 product runs on oneDNN's native bfloat16 kernels (VDPBF16PS) or on
// float32 kernels over exactly widened operands. Both accumulate in float32; which one is
// faster depends on the CPU: AMD Zen 4 retires VDPBF16PS at twice float32 FMA's rate of
// multiply-adds, while the Intel Xeons that expose AVX512_BF16 without AMX run it at half
// that rate. So the rate is measured once per process, and a compute-bound product takes
// the native kernels only where they are faster; a memory-bound one (few rows per weight,
// as in batch-1 inference) takes them wherever the CPU has AVX512_BF16, since reading half
// the weight bytes is what pays there. Without AVX512_BF16 (oneDNN would emulate the
// products) every bfloat16 product runs on float32 kernels.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace onnx_amp {

enum class Bf16Kernels {
  kAuto,     // measured: native where it is faster (the default)
  kNative,   // native wherever oneDNN has an optimised bfloat16 kernel
  kFloat32,  // always float32 kernels on widened operands
};

// The process-wide setting: the environment variable ONNX_AMP_BF16_KERNELS (auto, native
// or float32; another value is reported on stderr once and read as auto) until
// SetBf16Kernels changes it.
Bf16Kernels CurrentBf16Kernels();
// Sets the choice for the process (tests run both paths); returns the previous one.
Bf16Kernels SetBf16Kernels(Bf16Kernels kernels);
std::string_view Bf16KernelsName(Bf16Kernels kernels);
// The setting a name (auto, native, float32) stands for; nullopt for any other text.
std::optional<Bf16Kernels> ParseBf16Kernels(std::string_view name);

// Multiply-adds per second of VDPBF16PS over those of float32 FMA on one core, measured
// once (under a millisecond); 0 when the CPU has no AVX512_BF16.
double Bf16DotSpeedup();

// True when a bfloat16 product of `multiply_adds` over `weight_elements` weights should
// try the native kernels under the current setting.
bool NativeBf16Pays(double multiply_adds, double weight_elements);

// One line for `onnx-amp --version`: the setting, the measured rate and what it picks.
std::string DescribeBf16Kernels();

}  // namespace onnx_amp
