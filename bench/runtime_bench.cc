// Times one model on the CPU executor with activation fusion and weight prepacking
// off, each alone, and both on, in the same process on the same random inputs. Runs
// of the four configurations are interleaved so that load from other processes hits
// them alike; the median of each is reported with its ratio to "off". Also checks
// that prepacking changes no output bit (fusion may: folding a BatchNormalization or an
// Add into a Conv moves roundings, bounded by tests/runtime/plan_rewrite_test.cc).
//
//   runtime_bench MODEL [--batch N] [--runs R] [--threads T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/exec/host_heap.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/onnx/model_io.h"

namespace onnx_amp {
namespace {

struct Config {
  const char* name;
  bool fuse;
  bool prepack;
};

constexpr Config kConfigs[] = {{"off", false, false}, {"fusion", true, false}, {"prepack", false, true}, {"both", true, true}};

bool SameOutputs(const RunResult& a, const RunResult& b) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Tensor& x = a.outputs[i].tensor;
    const Tensor& y = b.outputs[i].tensor;
    if (x.dtype() != y.dtype() || x.shape() != y.shape() || std::memcmp(x.raw_data(), y.raw_data(), x.bytes()) != 0) {
      return false;
    }
  }
  return true;
}

int Bench(const std::string& path, int64_t batch, int runs, int threads) {
  Expected<onnx::ModelProto> model = LoadModel(path);
  if (!model.ok()) {
    std::fprintf(stderr, "runtime_bench: %s\n", model.status().message().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Executor>> executors;
  for (const Config& config : kConfigs) {
    ExecutorOptions options;
    options.num_threads = threads;
    options.fuse_activations = config.fuse;
    options.prepack_weights = config.prepack;
    Expected<std::unique_ptr<Executor>> executor = Executor::Create(*model, options);
    if (!executor.ok()) {
      std::fprintf(stderr, "runtime_bench: %s\n", executor.status().message().c_str());
      return 1;
    }
    executors.push_back(std::move(executor).value());
  }
  std::mt19937_64 rng(1);
  std::map<std::string, Tensor> feeds;
  for (const InputSpec& spec : executors[0]->inputs()) {
    std::map<std::string, int64_t> dims;
    for (const std::string& param : spec.dim_params) {
      if (!param.empty()) dims[param] = batch;
    }
    Expected<Tensor> tensor = RandomInput(spec, dims, rng);
    if (!tensor.ok()) {
      std::fprintf(stderr, "runtime_bench: %s\n", tensor.status().message().c_str());
      return 1;
    }
    feeds[spec.name] = std::move(tensor).value();
  }
  // Warm-up: builds the primitives and packs the weights; also the bit-identity check.
  std::vector<RunResult> first;
  for (auto& executor : executors) {
    Expected<RunResult> result = executor->Run(feeds);
    if (!result.ok()) {
      std::fprintf(stderr, "runtime_bench: %s\n", result.status().message().c_str());
      return 1;
    }
    first.push_back(std::move(result).value());
  }
  // Each configuration against the one that differs only in prepacking.
  const bool identical = SameOutputs(first[0], first[2]) && SameOutputs(first[1], first[3]);

  std::vector<std::vector<double>> seconds(executors.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < executors.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      Expected<RunResult> result = executors[i]->Run(feeds);
      seconds[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!result.ok()) {
        std::fprintf(stderr, "runtime_bench: %s\n", result.status().message().c_str());
        return 1;
      }
    }
  }
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  const double base = median(seconds[0]);
  std::printf("%s (batch %lld, %d runs, prepacked outputs %s)\n", path.c_str(), static_cast<long long>(batch), runs,
              identical ? "bit-identical" : "DIFFER");
  for (size_t i = 0; i < executors.size(); ++i) {
    const double m = median(seconds[i]);
    std::printf("  %-8s median %10.3f ms  min %10.3f ms  speedup %.3fx\n", kConfigs[i].name, m * 1e3,
                *std::min_element(seconds[i].begin(), seconds[i].end()) * 1e3, base / m);
  }
  return identical ? 0 : 2;
}

}  // namespace
}  // namespace onnx_amp

int main(int argc, char** argv) {
  onnx_amp::FixHeapThresholds();  // as onnx-amp does
  CLI::App app("Times a model with fusion and weight prepacking off and on");
  std::string model;
  int64_t batch = 1;
  int runs = 5;
  int threads = 0;
  app.add_option("MODEL", model, "ONNX model")->required();
  app.add_option("--batch", batch, "Size of every symbolic input dim")->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "Timed runs per configuration")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "Worker threads (0: one per core)")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  return onnx_amp::Bench(model, batch, runs, threads);
}
