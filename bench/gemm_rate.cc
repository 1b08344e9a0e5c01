// oneDNN's own GEMM rate on given shapes, the yardstick the CPU benchmark prints beside
// our GFLOP/s: one matmul primitive per shape, A in the layout our kernels pass it
// (row-major or transposed), B reordered once into the primitive's preferred layout
// (prepacked weights, the best case), float32 accumulation, C in float32 for float32
// operands and in the operand type for bfloat16 (as a mixed graph's GEMMs write it).
// Prints one JSON line per shape: the median and minimum over --reps runs. With --peak it
// prints the CPU's peak multiply-add rates on --threads threads instead: float32 FMA, and
// VDPBF16PS where the CPU has AVX512_BF16, which bound what any GEMM can reach.
//
//   gemm_rate --dtype f32|bf16 --shape MxKxN[:AB] ... [--reps R]
//   gemm_rate --peak [--threads T]
//   AB: two letters, n (row-major) or t (stored transposed), for A and B; default nn.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <dnnl.hpp>

#include "runtime/core/cpu_isa_cap.h"

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  bool a_transposed = false, b_transposed = false;
  std::string text;
};

bool ParseShape(const std::string& text, GemmShape& shape) {
  char layout[3] = "nn";
  long long m = 0, k = 0, n = 0;
  const int fields = std::sscanf(text.c_str(), "%lldx%lldx%lld:%2s", &m, &k, &n, layout);
  if (fields < 3 || m <= 0 || k <= 0 || n <= 0) return false;
  if ((layout[0] != 'n' && layout[0] != 't') || (layout[1] != 'n' && layout[1] != 't')) return false;
  shape = {m, k, n, layout[0] == 't', layout[1] == 't', text};
  return true;
}

// Median and minimum milliseconds of `reps` runs of one shape.
std::pair<double, double> TimeShape(const GemmShape& s, dt type, int reps) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_md({s.m, s.k}, type, s.a_transposed ? dnnl::memory::dims{1, s.m} : dnnl::memory::dims{s.k, 1});
  const dnnl::memory::desc b_plain({s.k, s.n}, type, s.b_transposed ? dnnl::memory::dims{1, s.k} : dnnl::memory::dims{s.n, 1});
  const dnnl::memory::desc b_any({s.k, s.n}, type, tag::any);
  const dnnl::memory::desc c_md({s.m, s.n}, type, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), engine);
  dnnl::memory a(a_md, engine), b_src(b_plain, engine), b(pd.weights_desc(), engine), c(c_md, engine);
  std::memset(a.get_data_handle(), 0, a_md.get_size());
  std::memset(b_src.get_data_handle(), 0, b_plain.get_size());
  dnnl::reorder(b_src, b).execute(stream, b_src, b);
  const dnnl::matmul matmul(pd);
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
    const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) ms.push_back(elapsed);  // the first run warms caches and page tables
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"shape\": \"%s\", \"impl\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f}\n", s.text.c_str(),
              pd.impl_info_str(), ms[ms.size() / 2], ms.front());
  std::fflush(stdout);
  return {ms[ms.size() / 2], ms.front()};
}

// Independent accumulator chains per thread: enough to cover the FMA latency on two ports.
constexpr int kChains = 12;
constexpr long kPeakIterations = 50'000'000;

// Each loop runs kPeakIterations rounds of kChains multiply-adds on full registers and
// returns a sum of accumulator lanes, which PeakGflops checks, so the work is kept.
__attribute__((target("avx512f"))) float FmaLoopAvx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 scale = _mm512_set1_ps(0.999f), shift = _mm512_set1_ps(0.0001f);
  for (long r = 0; r < kPeakIterations; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, acc[0]);
  return lanes[0] + lanes[15];
}

__attribute__((target("avx2,fma"))) float FmaLoopAvx2() {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 scale = _mm256_set1_ps(0.999f), shift = _mm256_set1_ps(0.0001f);
  for (long r = 0; r < kPeakIterations; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
  }
  float lanes[8];
  for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  _mm256_storeu_ps(lanes, acc[0]);
  return lanes[0] + lanes[7];
}

__attribute__((target("avx512f,avx512bf16"))) float DotLoopBf16() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(-0.001f));
  for (long r = 0; r < kPeakIterations; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, acc[0]);
  return lanes[0] + lanes[15];
}

// GFLOP/s of `loop` run once on each of `threads` threads at once, at `flops` per
// multiply-add instruction; 0 if a loop's result is not finite (a broken loop).
double PeakGflops(float (*loop)(), int threads, double flops) {
  std::vector<float> sums(threads);
  std::vector<std::thread> workers;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sums[t] = loop(); });
  for (std::thread& worker : workers) worker.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const float sum : sums) {
    if (!std::isfinite(sum)) return 0.0;
  }
  return flops * kPeakIterations * kChains * threads / seconds / 1e9;
}

void PrintPeaks(int threads) {
  __builtin_cpu_init();
  // ONNX_AMP_MAX_CPU_ISA holds the loops to what the runtime may use.
  const bool avx512 = onnx_amp::CpuIsaAllowed(onnx_amp::CpuIsa::kAvx512) && __builtin_cpu_supports("avx512f");
  const bool avx2 = onnx_amp::CpuIsaAllowed(onnx_amp::CpuIsa::kAvx2) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2) {
    std::printf("{\"peak\": \"f32_fma\", \"isa\": \"none\", \"gflops\": null}\n");
    return;
  }
  // A 512-bit FMA is 16 multiply-adds (32 flops), a 256-bit one 8.
  const double fma = avx512 ? PeakGflops(FmaLoopAvx512, threads, 32) : PeakGflops(FmaLoopAvx2, threads, 16);
  std::printf("{\"peak\": \"f32_fma\", \"isa\": \"%s\", \"threads\": %d, \"gflops\": %.1f}\n",
              avx512 ? "avx512" : "avx2", threads, fma);
  if (onnx_amp::CpuIsaAllowed(onnx_amp::CpuIsa::kAvx512Bf16) && __builtin_cpu_supports("avx512bf16")) {
    // VDPBF16PS: 32 bfloat16 products summed in pairs into 16 float32 lanes, 64 flops.
    std::printf("{\"peak\": \"bf16_dot\", \"isa\": \"avx512_bf16\", \"threads\": %d, \"gflops\": %.1f}\n",
                threads, PeakGflops(DotLoopBf16, threads, 64));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("oneDNN's matmul rate with prepacked weights on given shapes");
  std::string dtype = "f32";
  std::vector<std::string> shape_texts;
  int reps = 7, threads = 1;
  bool peak = false;
  app.add_option("--dtype", dtype, "f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  auto* shape_option =
      app.add_option("--shape", shape_texts, "MxKxN[:AB], AB in {n,t}^2 (A, B stored transposed)");
  app.add_option("--reps", reps, "Timed runs per shape")->check(CLI::PositiveNumber);
  app.add_flag("--peak", peak, "Print the CPU's peak multiply-add rates instead (float32 FMA, bfloat16 dot products)")
      ->excludes(shape_option);
  app.add_option("--threads", threads, "Threads for --peak")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (peak) {
    PrintPeaks(threads);
    return 0;
  }
  if (shape_texts.empty()) {
    std::fprintf(stderr, "gemm_rate: give --shape (one or more) or --peak\n");
    return 2;
  }
  std::vector<GemmShape> shapes;
  for (const std::string& text : shape_texts) {
    GemmShape shape;
    if (!ParseShape(text, shape)) {
      std::fprintf(stderr, "gemm_rate: --shape '%s': expected MxKxN or MxKxN:AB with A, B in {n, t}\n", text.c_str());
      return 2;
    }
    shapes.push_back(shape);
  }
  try {
    for (const GemmShape& shape : shapes) TimeShape(shape, dtype == "bf16" ? dt::bf16 : dt::f32, reps);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "gemm_rate: oneDNN: %s\n", e.what());
    return 1;
  }
  return 0;
}
