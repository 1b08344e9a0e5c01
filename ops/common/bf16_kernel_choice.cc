#include "ops/common/bf16_kernel_choice.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/core/cpu_isa_cap.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace onnx_amp {
namespace {

// Fewer rows than this per weight (batch-1 and small-batch inference) make a product
// memory-bound: native bfloat16 kernels read half the weight bytes and win even where
// their arithmetic is slower (measured crossover on a 4096x4096 weight between 8 rows,
// native 2.4x faster, and 32 rows, float32 1.3x faster).
constexpr double kMemoryBoundRows = 16;

Bf16Kernels KernelsFromEnvironment() {
  const char* value = std::getenv("ONNX_AMP_BF16_KERNELS");
  if (value == nullptr || *value == '\0') return Bf16Kernels::kAuto;
  if (const std::optional<Bf16Kernels> kernels = ParseBf16Kernels(value)) return *kernels;
  std::fprintf(stderr, "onnx-amp: ONNX_AMP_BF16_KERNELS='%s' is not auto, native or float32; using auto\n", value);
  return Bf16Kernels::kAuto;
}

std::atomic<Bf16Kernels>& Setting() {
  static std::atomic<Bf16Kernels> setting(KernelsFromEnvironment());
  return setting;
}

#if defined(__x86_64__)

// Twelve independent accumulator chains keep both FMA ports busy through their latency;
// the asm barrier keeps the compiler from hoisting or folding the loop.
constexpr int kChains = 12;
constexpr int kIterations = 2000;

// Keeps the accumulators alive, so the loop is not optimised away.
__attribute__((target("avx512f"))) void Sink(const __m512 (&acc)[kChains]) {
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float sink = lanes[0];
  (void)sink;
}

__attribute__((target("avx512f"))) double FmaSeconds() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(0.5f);
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(a, b, acc[i]);
    asm volatile("" : "+v"(a));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Sink(acc);
  return seconds;
}

__attribute__((target("avx512f,avx512bf16"))) double DotSeconds() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512i a = _mm512_set1_epi16(0x3f80), b = _mm512_set1_epi16(0x3f00);  // bfloat16 1.0 and 0.5
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
    asm volatile("" : "+v"(a));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Sink(acc);
  return seconds;
}

double MeasureSpeedup() {
  __builtin_cpu_init();
  if (!CpuIsaAllowed(CpuIsa::kAvx512Bf16) || !__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bf16")) {
    return 0.0;
  }
  // The fastest of several alternating tries: a try the scheduler interrupted only
  // looks slower, so the minimum of each is its rate on a core of its own.
  double fma = 1e9, dot = 1e9;
  for (int attempt = 0; attempt < 7; ++attempt) {
    fma = std::min(fma, FmaSeconds());
    dot = std::min(dot, DotSeconds());
  }
  // Equal instruction counts; a VDPBF16PS does 32 multiply-adds, an FMA 16.
  return 2.0 * fma / dot;
}

#else

double MeasureSpeedup() { return 0.0; }

#endif

}  // namespace

Bf16Kernels CurrentBf16Kernels() { return Setting().load(); }

Bf16Kernels SetBf16Kernels(Bf16Kernels kernels) { return Setting().exchange(kernels); }

std::string_view Bf16KernelsName(Bf16Kernels kernels) {
  switch (kernels) {
    case Bf16Kernels::kAuto: return "auto";
    case Bf16Kernels::kNative: return "native";
    case Bf16Kernels::kFloat32: return "float32";
  }
  return "?";
}

std::optional<Bf16Kernels> ParseBf16Kernels(std::string_view name) {
  for (Bf16Kernels kernels : {Bf16Kernels::kAuto, Bf16Kernels::kNative, Bf16Kernels::kFloat32}) {
    if (name == Bf16KernelsName(kernels)) return kernels;
  }
  return std::nullopt;
}

double Bf16DotSpeedup() {
  static const double speedup = MeasureSpeedup();
  return speedup;
}

bool NativeBf16Pays(double multiply_adds, double weight_elements) {
  switch (CurrentBf16Kernels()) {
    case Bf16Kernels::kNative: return true;
    case Bf16Kernels::kFloat32: return false;
    case Bf16Kernels::kAuto: break;
  }
  // Without AVX512_BF16, oneDNN's bfloat16 kernels emulate the products: never faster.
  const double speedup = Bf16DotSpeedup();
  if (speedup == 0.0) return false;
  if (weight_elements > 0 && multiply_adds / weight_elements < kMemoryBoundRows) return true;
  return speedup > 1.0;
}

std::string DescribeBf16Kernels() {
  const Bf16Kernels kernels = CurrentBf16Kernels();
  std::string text = "bfloat16 products (ONNX_AMP_BF16_KERNELS=" + std::string(Bf16KernelsName(kernels)) + "): ";
  if (kernels == Bf16Kernels::kFloat32) return text + "float32 kernels on widened operands";
  const double speedup = Bf16DotSpeedup();
  char rate[96] = " (no AVX512_BF16)";
  if (speedup > 0.0) {
    std::snprintf(rate, sizeof(rate), " (VDPBF16PS does %.2fx the multiply-adds per second of float32 FMA)", speedup);
  }
  if (kernels == Bf16Kernels::kNative) return text + "native kernels wherever oneDNN has them" + rate;
  if (speedup == 0.0) return text + "float32 kernels on widened operands" + rate;
  if (speedup > 1.0) return text + "native kernels" + rate;
  return text + "float32 kernels on widened operands, native below " + std::to_string(int(kMemoryBoundRows)) +
         " rows per weight" + rate;
}

}  // namespace onnx_amp
