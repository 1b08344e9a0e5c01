// Times our training step on the GPU: the model's training and update graphs on the
// CUDA device, one synthetic batch kept on the device (as the PyTorch side of the
// benchmark keeps its batch), `--warmup` steps, then the median of `--steps` timed
// steps. A step is timed from its start until its loss and skip flag are on the host,
// so it includes every kernel it queued. Prints one JSON line.
//
//   gpu_train_bench MODEL --policy P --batch N [--optimizer rmsprop|sgd] [--steps S]
//                   [--warmup W] [--allow-tf32]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "converter/convert_model.h"
#include "ops/cuda_kernels.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/onnx/model_io.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp {
namespace {

struct BenchOptions {
  std::string model;
  std::string policy = "mixed_bfloat16";
  int64_t batch = 1024;
  std::string optimizer = "rmsprop";
  int steps = 50;
  int warmup = 10;
  bool allow_tf32 = false;
  bool no_cuda_graph = false;
};

Expected<TrainingGraph> GraphFor(const onnx::ModelProto& model, PolicyKind policy) {
  ONNX_AMP_ASSIGN_OR_RETURN(TrainableModel trainable, PrepareTrainableModel(model, LossKind::kCrossEntropy));
  if (policy != PolicyKind::kFloat32) {
    ConvertOptions convert;
    convert.policy.kind = policy;
    convert.target = ConvertTarget::kOnnxAmp;
    ONNX_AMP_RETURN_IF_ERROR(convert.policy.Compile());
    ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult converted, ConvertModel(std::move(trainable.forward), convert));
    trainable.forward = std::move(converted.model);
  }
  return BuildTrainingGraph(std::move(trainable), LossKind::kCrossEntropy);
}

// A random batch of the model's input shape on the device, labels in [0, classes).
Expected<Batch> DeviceBatch(const TrainingGraph& graph, int64_t n, Device& device) {
  Shape sample;
  int64_t classes = 0;
  for (const onnx::ValueInfoProto& input : graph.eval_model.graph().input()) {
    if (input.name() != graph.data_input) continue;
    for (int d = 1; d < input.type().tensor_type().shape().dim_size(); ++d) {
      sample.push_back(input.type().tensor_type().shape().dim(d).dim_value());
    }
  }
  for (const onnx::ValueInfoProto& output : graph.eval_model.graph().output()) {
    if (output.name() == graph.prediction_output && output.type().tensor_type().shape().dim_size() == 2) {
      classes = output.type().tensor_type().shape().dim(1).dim_value();
    }
  }
  if (classes <= 0) return InvalidArgument("the model's output needs a fixed [N, classes] shape");
  Shape shape = {n};
  shape.insert(shape.end(), sample.begin(), sample.end());
  std::mt19937 rng(1);
  Tensor data = Tensor::Empty(DType::kFloat32, shape);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (int64_t i = 0; i < data.num_elements(); ++i) data.data<float>()[i] = pixel(rng);
  Tensor labels = Tensor::Empty(DType::kInt64, {n, 1});
  for (int64_t i = 0; i < n; ++i) labels.data<int64_t>()[i] = static_cast<int64_t>(rng() % classes);
  Batch batch;
  ONNX_AMP_ASSIGN_OR_RETURN(batch.data, CopyToDevice(data, device));
  ONNX_AMP_ASSIGN_OR_RETURN(batch.target, CopyToDevice(labels, device));
  return batch;
}

Status Bench(const BenchOptions& options) {
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(options.model));
  ONNX_AMP_ASSIGN_OR_RETURN(const PolicyKind policy, ParsePolicyKind(options.policy));
  CudaDeviceOptions device_options;
  device_options.allow_tf32 = options.allow_tf32;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device, CudaDevice::Create(device_options, CudaKernelRegistry()));
  ONNX_AMP_ASSIGN_OR_RETURN(TrainingGraph graph, GraphFor(model, policy));
  ONNX_AMP_ASSIGN_OR_RETURN(const Batch batch, DeviceBatch(graph, options.batch, *device));
  TrainerConfig config;
  config.device = device.get();
  ONNX_AMP_ASSIGN_OR_RETURN(config.optimizer.kind, ParseOptimizerKind(options.optimizer));
  config.optimizer.learning_rate = config.optimizer.kind == OptimizerKind::kSgd ? 0.01f : 0.001f;
  config.optimizer.momentum = config.optimizer.kind == OptimizerKind::kSgd ? 0.9f : 0.0f;
  config.scaler.enabled = policy == PolicyKind::kMixedFloat16;
  config.capture_steps = !options.no_cuda_graph;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(graph), config));
  std::vector<double> milliseconds;
  bool captured = false;  // the step ran as a CUDA graph (the trainer's note says when it is captured)
  for (int step = 0; step < options.warmup + options.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    ONNX_AMP_ASSIGN_OR_RETURN(const StepResult result, trainer->Step({&batch, 1}));
    if (result.note.find("captured and replayed") != std::string::npos) captured = true;
    if (!result.note.empty()) std::fprintf(stderr, "%s\n", result.note.c_str());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step >= options.warmup) milliseconds.push_back(ms);
  }
  std::sort(milliseconds.begin(), milliseconds.end());
  const auto at = [&](double q) { return milliseconds[static_cast<size_t>(q * (milliseconds.size() - 1))]; };
  std::printf("{\"model\": \"%s\", \"policy\": \"%s\", \"batch\": %lld, \"tf32\": %s, \"steps\": %zu, "
              "\"cuda_graph\": %s, \"median_ms\": %.4f, \"p10_ms\": %.4f, \"p90_ms\": %.4f, \"device\": \"%s\"}\n",
              options.model.c_str(), options.policy.c_str(), static_cast<long long>(options.batch),
              options.allow_tf32 ? "true" : "false", milliseconds.size(), captured ? "true" : "false", at(0.5),
              at(0.1), at(0.9),
              device->Describe().c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace onnx_amp

int main(int argc, char** argv) {
  onnx_amp::BenchOptions options;
  CLI::App app{"Times onnx-amp training steps on the GPU"};
  app.add_option("MODEL", options.model, "float32 ONNX model")->required();
  app.add_option("--policy", options.policy, "float32, mixed_float16 or mixed_bfloat16");
  app.add_option("--batch", options.batch, "samples per step");
  app.add_option("--optimizer", options.optimizer, "rmsprop (the guide's) or sgd (momentum 0.9)");
  app.add_option("--steps", options.steps, "timed steps");
  app.add_option("--warmup", options.warmup, "untimed steps first");
  app.add_flag("--allow-tf32", options.allow_tf32, "float32 on TF32 Tensor Cores");
  app.add_flag("--no-cuda-graph", options.no_cuda_graph, "every step eager (default: the steady step as a CUDA graph)");
  CLI11_PARSE(app, argc, argv);
  const onnx_amp::Status status = onnx_amp::Bench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "gpu_train_bench: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
