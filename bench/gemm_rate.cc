// oneDNN's own GEMM rate on given shapes, the yardstick the CPU benchmark prints beside
// our GFLOP/s: one matmul primitive per shape, A in the layout our kernels pass it
// (row-major or transposed), B reordered once into the primitive's preferred layout
// (prepacked weights, the best case), float32 accumulation, C in float32 for float32
// operands and in the operand type for bfloat16 (as a mixed graph's GEMMs write it).
// Prints one JSON line per shape: the median and minimum over --reps runs.
//
//   gemm_rate --dtype f32|bf16 --shape MxKxN[:AB] ... [--reps R]
//   AB: two letters, n (row-major) or t (stored transposed), for A and B; default nn.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <dnnl.hpp>

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("oneDNN's matmul rate with prepacked weights on given shapes");
  std::string dtype = "f32";
  std::vector<std::string> shape_texts;
  int reps = 7;
  app.add_option("--dtype", dtype, "f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--shape", shape_texts, "MxKxN[:AB], AB in {n,t}^2 (A, B stored transposed)")->required();
  app.add_option("--reps", reps, "Timed runs per shape")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
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
