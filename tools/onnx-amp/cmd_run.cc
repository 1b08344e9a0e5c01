// `onnx-amp run MODEL [--inputs FILE.npz] [--input NAME=FILE ...] [--random [--seed N]]
// [--dim NAME=N ...] [-o OUT.npz] [--stats] [--repeat N] [--threads N] [--no-fuse]`: runs a
// model on the CPU executor. Inputs come from an .npz (arrays named by input name), from
// single files (.npy, .pb TensorProto, or an .npz holding an array of that name), or are
// generated from the declared types and shapes. Outputs go to an .npz named by output name,
// or are summarized on stdout. --repeat times the runs after the first, which builds the
// kernels (oneDNN primitives, packed weights).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/convert.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/executor/run_stats.h"
#include "runtime/io/npy.h"
#include "runtime/io/npz.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/device_flag.h"
#include "tools/onnx-amp/memory_flag.h"

namespace onnx_amp {
namespace {

constexpr int kValuesShown = 8;

struct RunOptions {
  std::string model;
  std::string inputs_npz;
  std::vector<std::string> inputs;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> dims;
  std::string output;
  bool stats = false;
  int repeat = 1;
  int threads = 0;
  bool no_fuse = false;
  std::string max_memory;
  DeviceFlags device;
};

// Splits "NAME=VALUE" for the flag `flag`.
Expected<std::pair<std::string, std::string>> SplitAssignment(const std::string& text, const std::string& flag) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument(flag + " '" + text + "': expected NAME=VALUE");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Expected<std::map<std::string, int64_t>> ParseDims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> sizes;
  for (const std::string& text : dims) {
    ONNX_AMP_ASSIGN_OR_RETURN(auto assignment, SplitAssignment(text, "--dim"));
    const std::string& value = assignment.second;
    size_t used = 0;
    long long size = -1;
    try {
      size = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || size < 0) {
      return InvalidArgument("--dim " + text + ": the size must be a non-negative integer");
    }
    sizes[assignment.first] = size;
  }
  return sizes;
}

// One tensor from FILE for the input NAME: .npy, .pb, or the array NAME in an .npz.
Expected<Tensor> ReadInputFile(const std::string& name, const std::string& path) {
  if (path.ends_with(".npy")) return ReadNpyFile(path);
  if (path.ends_with(".pb")) {
    ONNX_AMP_ASSIGN_OR_RETURN(NamedTensor tensor, ReadTensorProtoFile(path));
    return std::move(tensor.tensor);
  }
  if (path.ends_with(".npz")) {
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<NamedTensor> arrays, ReadNpzFile(path));
    for (NamedTensor& array : arrays) {
      if (array.name == name) return std::move(array.tensor);
    }
    if (arrays.size() == 1) return std::move(arrays[0].tensor);
    return NotFound(path + ": no array named '" + name + "'");
  }
  return InvalidArgument("--input " + name + "=" + path + ": the file must end in .npy, .pb or .npz");
}

Expected<std::map<std::string, Tensor>> GatherInputs(const RunOptions& options, const Executor& executor) {
  std::set<std::string> input_names;
  for (const InputSpec& spec : executor.inputs()) input_names.insert(spec.name);
  std::map<std::string, Tensor> feeds;
  if (!options.inputs_npz.empty()) {
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<NamedTensor> arrays, ReadNpzFile(options.inputs_npz));
    for (NamedTensor& array : arrays) {
      if (!input_names.count(array.name)) {
        return InvalidArgument(options.inputs_npz + ": array '" + array.name + "' is not an input of the model");
      }
      feeds[array.name] = std::move(array.tensor);
    }
  }
  for (const std::string& text : options.inputs) {
    ONNX_AMP_ASSIGN_OR_RETURN(auto assignment, SplitAssignment(text, "--input"));
    const auto& [name, path] = assignment;
    if (!input_names.count(name)) return InvalidArgument("--input " + text + ": the model has no input '" + name + "'");
    ONNX_AMP_ASSIGN_OR_RETURN(feeds[name], ReadInputFile(name, path));
  }

  ONNX_AMP_ASSIGN_OR_RETURN(const auto dim_sizes, ParseDims(options.dims));
  std::set<std::string> known_params;
  for (const InputSpec& spec : executor.inputs()) known_params.insert(spec.dim_params.begin(), spec.dim_params.end());
  for (const auto& [param, size] : dim_sizes) {
    if (!known_params.count(param)) return InvalidArgument("--dim " + param + ": no input has a dim named '" + param + "'");
  }
  if (options.random) {
    std::mt19937_64 rng(options.seed);
    for (const InputSpec& spec : executor.inputs()) {
      if (feeds.count(spec.name) || spec.has_default) continue;
      ONNX_AMP_ASSIGN_OR_RETURN(feeds[spec.name], RandomInput(spec, dim_sizes, rng));
    }
  }
  for (const InputSpec& spec : executor.inputs()) {
    if (!feeds.count(spec.name) && !spec.has_default) {
      return InvalidArgument("missing input '" + spec.name + "' (" + InputSpecToString(spec) +
                             "): give it with --inputs or --input, or use --random");
    }
  }
  return feeds;
}

std::string FormatValues(const Tensor& tensor) {
  std::string text;
  const int64_t shown = std::min<int64_t>(tensor.num_elements(), kValuesShown);
  for (int64_t i = 0; i < shown; ++i) {
    char value[48];
    switch (tensor.dtype()) {
      case DType::kFloat32: std::snprintf(value, sizeof value, "%.6g", tensor.data<float>()[i]); break;
      case DType::kFloat64: std::snprintf(value, sizeof value, "%.9g", tensor.data<double>()[i]); break;
      case DType::kFloat16:
        std::snprintf(value, sizeof value, "%.5g", HalfBitsToFloat(static_cast<const uint16_t*>(tensor.raw_data())[i]));
        break;
      case DType::kBFloat16:
        std::snprintf(value, sizeof value, "%.4g",
                      BFloat16BitsToFloat(static_cast<const uint16_t*>(tensor.raw_data())[i]));
        break;
      case DType::kInt8: std::snprintf(value, sizeof value, "%d", tensor.data<int8_t>()[i]); break;
      case DType::kInt16: std::snprintf(value, sizeof value, "%d", tensor.data<int16_t>()[i]); break;
      case DType::kInt32: std::snprintf(value, sizeof value, "%d", tensor.data<int32_t>()[i]); break;
      case DType::kInt64: std::snprintf(value, sizeof value, "%lld", static_cast<long long>(tensor.data<int64_t>()[i])); break;
      case DType::kUInt8: std::snprintf(value, sizeof value, "%u", tensor.data<uint8_t>()[i]); break;
      case DType::kUInt16: std::snprintf(value, sizeof value, "%u", tensor.data<uint16_t>()[i]); break;
      case DType::kUInt32: std::snprintf(value, sizeof value, "%u", tensor.data<uint32_t>()[i]); break;
      case DType::kUInt64:
        std::snprintf(value, sizeof value, "%llu", static_cast<unsigned long long>(tensor.data<uint64_t>()[i]));
        break;
      case DType::kBool: std::snprintf(value, sizeof value, "%s", tensor.data<bool>()[i] ? "true" : "false"); break;
      case DType::kUndefined:
      case DType::kString:
      case DType::kComplex64:
      case DType::kComplex128: std::snprintf(value, sizeof value, "?"); break;
    }
    text += (i ? " " : "") + std::string(value);
  }
  if (tensor.num_elements() > shown) text += " ...";
  return text;
}

// NumPy has no bfloat16: outputs in it are written as float32, which holds them exactly.
Tensor NumpyCompatible(const Tensor& tensor) {
  if (tensor.dtype() != DType::kBFloat16) return tensor;
  Tensor widened = Tensor::Empty(DType::kFloat32, tensor.shape());
  ConvertBFloat16ToFloat(static_cast<const uint16_t*>(tensor.raw_data()), widened.data<float>(),
                         static_cast<size_t>(tensor.num_elements()));
  return widened;
}

Status WriteText(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return IoError("cannot write to standard output");
  }
  return Status::Ok();
}

// One line: the median, minimum and maximum wall time of runs 2 to `repeat`.
std::string FormatLatencies(std::vector<double> latencies_ms, int repeat) {
  std::sort(latencies_ms.begin(), latencies_ms.end());
  const size_t count = latencies_ms.size();
  const double median = count % 2 == 1 ? latencies_ms[count / 2]
                                       : 0.5 * (latencies_ms[count / 2 - 1] + latencies_ms[count / 2]);
  char line[256];
  std::snprintf(line, sizeof line,
                "latency over runs 2-%d (the first builds the kernels): median %.3f ms, min %.3f ms, max %.3f ms\n",
                repeat, median, latencies_ms.front(), latencies_ms.back());
  return line;
}

Status RunModel(const RunOptions& options) {
  ExecutorOptions executor_options;
  ONNX_AMP_ASSIGN_OR_RETURN(const std::unique_ptr<Device> device, OpenDevice(options.device));
  executor_options.device = device.get();
  ONNX_AMP_ASSIGN_OR_RETURN(executor_options.max_memory_bytes, ParseMaxMemoryFlag(options.max_memory));
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(options.model));
  executor_options.num_threads = options.threads;
  executor_options.fuse_activations = !options.no_fuse;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(model, executor_options);
  if (!executor.ok()) return executor.status().WithContext(options.model);
  ONNX_AMP_ASSIGN_OR_RETURN(const auto feeds, GatherInputs(options, **executor));
  // The first run builds the kernels and is not timed; the outputs written are the last run's.
  Expected<RunResult> result = (*executor)->Run(feeds);
  if (!result.ok()) return result.status().WithContext(options.model);
  std::vector<double> latencies_ms;
  OpTimeTotals timed_ops;
  for (int run = 1; run < options.repeat; ++run) {
    const auto start = std::chrono::steady_clock::now();
    result = (*executor)->Run(feeds);
    const auto end = std::chrono::steady_clock::now();
    if (!result.ok()) return result.status().WithContext(options.model);
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    timed_ops.Add(result->stats);
  }

  if (!options.output.empty()) {
    std::vector<NamedTensor> arrays;
    for (const NamedTensor& output : result->outputs) {
      if (output.tensor.dtype() == DType::kBFloat16) {
        std::fprintf(stderr, "onnx-amp: note: output '%s' is bfloat16; written as float32 (exact)\n",
                     output.name.c_str());
      }
      arrays.push_back({output.name, NumpyCompatible(output.tensor)});
    }
    ONNX_AMP_RETURN_IF_ERROR(WriteNpzFile(options.output, arrays));
  } else {
    std::string text;
    for (const NamedTensor& output : result->outputs) {
      text += output.name + ": " + std::string(DTypeName(output.tensor.dtype())) +
              ShapeToString(output.tensor.shape()) + " " + FormatValues(output.tensor) + "\n";
    }
    ONNX_AMP_RETURN_IF_ERROR(WriteText(text));
  }
  if (options.repeat == 1) {
    if (options.stats) ONNX_AMP_RETURN_IF_ERROR(WriteText(FormatRunStats(result->stats)));
    return Status::Ok();
  }
  if (options.stats) {
    const int64_t timed_runs = static_cast<int64_t>(latencies_ms.size());
    ONNX_AMP_RETURN_IF_ERROR(WriteText("time per op type, per run (runs 2-" + std::to_string(options.repeat) +
                                       "):\n" + FormatOpTimesPer(timed_ops, timed_runs, "run") +
                                       FormatMemoryStats(result->stats)));
  }
  return WriteText(FormatLatencies(latencies_ms, options.repeat));
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Run a model on the CPU (or with --device cuda on the GPU)");
  command->add_option("MODEL", options->model, "ONNX model file")->required();
  command->add_option("--inputs", options->inputs_npz, "An .npz whose arrays are named by input name");
  command->add_option("--input", options->inputs, "NAME=FILE: one input from an .npy, .pb or .npz file");
  CLI::Option* random = command->add_flag("--random", options->random,
                                          "Generate the inputs not given: floats in [-1, 1), integers in [0, 10)");
  command->add_option("--seed", options->seed, "Seed for --random")->needs(random);
  command->add_option("--dim", options->dims, "NAME=N: size of a symbolic dim, for --random");
  command->add_option("-o,--output", options->output, "Write the outputs to this .npz, named by output name");
  command->add_flag("--stats", options->stats, "Print time per op type and peak tensor memory");
  command
      ->add_option("--repeat", options->repeat,
                   "Run N times and print the latency of runs 2-N (the first builds the kernels); with --stats, "
                   "time per op type averaged over them")
      ->check(CLI::Range(1, 1000000));
  command->add_option("--threads", options->threads, "Worker threads (0: one per core)")->check(CLI::NonNegativeNumber);
  command->add_flag("--no-fuse", options->no_fuse,
                    "Run each node as its own step (no Conv/Gemm/MatMul + activation fusion)");
  AddMaxMemoryFlag(*command, options->max_memory);
  AddDeviceFlags(*command, options->device);
  runner.Bind(*command, [options] { return RunModel(*options); });
}

}  // namespace onnx_amp
