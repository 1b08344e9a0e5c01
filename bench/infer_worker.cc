// The onnx-amp side of the CPU benchmark's inference rows (bench/cpu_bench.py): loads
// one model into the CPU executor (activation fusion and weight prepacking on), makes
// random inputs with every "batch" dim set to --batch (other symbolic dims to --seq),
// runs once to build primitives and pack weights, prints "ready", then times one run
// per line read on stdin and answers each with its milliseconds. The driver talks to
// this process and to the ONNX Runtime worker in turn, so both see the same load.
//
//   cpu_bench_infer MODEL [--batch N] [--seq N] [--threads T] [--nchw]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/exec/host_heap.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/onnx/model_io.h"

namespace onnx_amp {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "cpu_bench_infer: %s\n", status.message().c_str());
  return 1;
}

int Serve(const std::string& path, int64_t batch, int64_t seq, int threads, bool channels_last) {
  Expected<onnx::ModelProto> model = LoadModel(path);
  if (!model.ok()) return Fail(model.status());
  ExecutorOptions options;
  options.num_threads = threads;
  options.channels_last = channels_last;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(*model, options);
  if (!executor.ok()) return Fail(executor.status());
  std::mt19937_64 rng(1);
  std::map<std::string, Tensor> feeds;
  for (const InputSpec& spec : (*executor)->inputs()) {
    std::map<std::string, int64_t> dims;
    for (const std::string& param : spec.dim_params) {
      if (!param.empty()) dims[param] = param == "batch" ? batch : seq;
    }
    Expected<Tensor> tensor = RandomInput(spec, dims, rng);
    if (!tensor.ok()) return Fail(tensor.status());
    feeds[spec.name] = std::move(tensor).value();
  }
  Expected<RunResult> warm = (*executor)->Run(feeds);
  if (!warm.ok()) return Fail(warm.status());
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto start = std::chrono::steady_clock::now();
    Expected<RunResult> result = (*executor)->Run(feeds);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) return Fail(result.status());
    std::printf("%.4f\n", ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace onnx_amp

int main(int argc, char** argv) {
  onnx_amp::FixHeapThresholds();  // as onnx-amp does
  CLI::App app("Times runs of one model on the CPU executor, one per line read on stdin");
  std::string model;
  int64_t batch = 1;
  int64_t seq = 32;
  int threads = 0;
  bool nchw = false;
  app.add_option("MODEL", model, "ONNX model")->required();
  app.add_option("--batch", batch, "Size of every dim named 'batch'")->check(CLI::PositiveNumber);
  app.add_option("--seq", seq, "Size of every other symbolic dim")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "Worker threads (0: one per core)")->check(CLI::NonNegativeNumber);
  app.add_flag("--nchw", nchw, "Reorder every convolution's activations to and from NCHW (no channels-last values)");
  CLI11_PARSE(app, argc, argv);
  return onnx_amp::Serve(model, batch, seq, threads, !nchw);
}
