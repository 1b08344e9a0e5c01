// `onnx-amp train MODEL --data PATH [...]`: trains a float32 model on the CPU executor
// with float32 master weights, optionally under a mixed policy with loss scaling; each
// step runs the training graph per micro-batch, then the update graph (trainer.h).
// Progress goes to stderr, a summary per epoch to stdout, one JSON line per step to
// --metrics; checkpoints are written atomically and --resume continues bit-identically.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "converter/convert_model.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_graph.h"
#include "tools/onnx-amp/command.h"

namespace onnx_amp {
namespace {

struct TrainOptions {
  std::string model;
  std::string data;
  std::string policy = "float32";
  std::string optimizer = "rmsprop";
  float lr = -1.0f;  // < 0: the optimizer's Keras default
  float momentum = 0.0f;
  bool nesterov = false;
  int64_t batch_size = 32;
  int64_t epochs = 1;
  int64_t max_steps = 0;
  int64_t accumulation = 1;
  std::string loss = "cross_entropy";
  std::string loss_scale = "";  // "" : dynamic for float16, off otherwise
  uint64_t seed = 0;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  std::string export_path;
  std::string export_policy = "float32";
  std::string metrics;
  int32_t max_consecutive_skips = 0;
  float clip_norm = 0.0f;
  std::string lr_schedule = "constant";
  int64_t train_limit = 0;
  int64_t eval_limit = 0;
  std::string save_training_graph;
  int threads = 0;
};

Expected<LossScalerConfig> ScalerConfig(const TrainOptions& options, PolicyKind policy) {
  LossScalerConfig config;
  config.max_consecutive_skips = options.max_consecutive_skips;
  if (options.loss_scale.empty()) {
    config.enabled = policy == PolicyKind::kMixedFloat16;
    return config;
  }
  if (options.loss_scale == "dynamic") return config;
  try {
    size_t used = 0;
    const float scale = std::stof(options.loss_scale, &used);
    if (used != options.loss_scale.size() || !(scale > 0.0f) || !std::isfinite(scale)) throw std::invalid_argument("");
    config.dynamic = false;
    config.initial_scale = scale;
  } catch (const std::exception&) {
    return InvalidArgument("--loss-scale '" + options.loss_scale + "': expected dynamic or a positive number");
  }
  return config;
}

// The model's input shape without the batch axis, and the class count of its output.
Expected<std::pair<Shape, int64_t>> SampleShape(const TrainingGraph& graph) {
  Shape shape;
  int64_t classes = 0;
  for (const onnx::ValueInfoProto& input : graph.eval_model.graph().input()) {
    if (input.name() != graph.data_input) continue;
    const auto& dims = input.type().tensor_type().shape().dim();
    for (int d = 1; d < dims.size(); ++d) {
      if (dims[d].dim_value() <= 0) return InvalidArgument("input '" + input.name() + "' needs fixed non-batch dims");
      shape.push_back(dims[d].dim_value());
    }
  }
  for (const onnx::ValueInfoProto& output : graph.eval_model.graph().output()) {
    if (output.name() != graph.prediction_output) continue;
    const auto& dims = output.type().tensor_type().shape().dim();
    if (dims.size() == 2) classes = dims[1].dim_value();
  }
  if (classes <= 0) return InvalidArgument("output '" + graph.prediction_output + "' needs a fixed shape [N, classes]");
  return std::make_pair(shape, classes);
}

// Where --save-training-graph FILE puts the update graph: FILE.update.onnx, with FILE's
// .onnx extension dropped first.
std::filesystem::path UpdateGraphPath(const std::filesystem::path& path) {
  std::filesystem::path update = path;
  if (update.extension() == ".onnx") update.replace_extension();
  update += ".update.onnx";
  return update;
}

Status ExportModel(const onnx::ModelProto& original, Trainer& trainer, const std::string& path,
                   const std::string& policy_name) {
  onnx::ModelProto model = original;
  for (onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer()) {
    for (const NamedTensor& weight : trainer.weights()) {
      if (weight.name != init.name()) continue;
      ONNX_AMP_ASSIGN_OR_RETURN(init, TensorToProto(weight.tensor, weight.name));
    }
  }
  ONNX_AMP_ASSIGN_OR_RETURN(PolicyKind policy, ParsePolicyKind(policy_name));
  if (policy != PolicyKind::kFloat32) {
    ConvertOptions convert;
    convert.policy.kind = policy;
    ONNX_AMP_RETURN_IF_ERROR(convert.policy.Compile());
    ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult converted, ConvertModel(model, convert));
    model = std::move(converted.model);
  }
  return SaveModel(model, path);
}

class Metrics {
 public:
  Status Open(const std::string& path, bool append) {
    if (path.empty()) return Status::Ok();
    file_.open(path, append ? std::ios::app : std::ios::trunc);
    if (!file_) return IoError(path + ": cannot open for writing");
    return Status::Ok();
  }
  void Write(const nlohmann::json& line) {
    if (file_.is_open()) file_ << line.dump() << '\n' << std::flush;
  }

 private:
  std::ofstream file_;
};

Expected<EvalResult> EvaluateSet(Trainer& trainer, const Dataset& data, const Shape& sample, LossKind loss,
                                 int64_t classes, int64_t batch_size) {
  EvalResult result;
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < data.size(); start += batch_size) {
    indices.clear();
    for (int64_t i = start; i < std::min(start + batch_size, data.size()); ++i) indices.push_back(i);
    ONNX_AMP_ASSIGN_OR_RETURN(Batch batch, MakeBatch(data, indices, sample, loss, classes));
    ONNX_AMP_RETURN_IF_ERROR(trainer.Evaluate(batch, result));
  }
  return result;
}

Status Train(const TrainOptions& options) {
  if (options.batch_size <= 0) return InvalidArgument("--batch-size must be positive");
  if (options.accumulation <= 0) return InvalidArgument("--accumulation-steps must be positive");
  if ((options.checkpoint_every > 0 || options.resume) && options.checkpoint_dir.empty()) {
    return InvalidArgument("--checkpoint-every and --resume need --checkpoint-dir");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(options.model));
  ONNX_AMP_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options.data));
  data.train = TakeFirst(data.train, options.train_limit);
  if (data.eval) data.eval = TakeFirst(*data.eval, options.eval_limit);

  TrainingGraphOptions graph_options;
  ONNX_AMP_ASSIGN_OR_RETURN(graph_options.policy, ParsePolicyKind(options.policy));
  ONNX_AMP_ASSIGN_OR_RETURN(graph_options.loss, ParseLossKind(options.loss));
  Expected<TrainingGraph> graph = BuildTrainingGraph(model, graph_options);
  if (!graph.ok()) return graph.status().WithContext(options.model);
  ONNX_AMP_ASSIGN_OR_RETURN(auto shape_and_classes, SampleShape(*graph));
  const auto& [sample, classes] = shape_and_classes;

  TrainerConfig config;
  ONNX_AMP_ASSIGN_OR_RETURN(config.optimizer.kind, ParseOptimizerKind(options.optimizer));
  config.optimizer.learning_rate =
      options.lr >= 0.0f ? options.lr : (config.optimizer.kind == OptimizerKind::kSgd ? 0.01f : 0.001f);
  config.optimizer.momentum = options.momentum;
  config.optimizer.nesterov = options.nesterov;
  ONNX_AMP_ASSIGN_OR_RETURN(config.scaler, ScalerConfig(options, graph_options.policy));
  config.clip_norm = options.clip_norm;
  config.num_threads = options.threads;
  ONNX_AMP_ASSIGN_OR_RETURN(config.schedule.kind, ParseLrScheduleKind(options.lr_schedule));

  const int64_t samples_per_step = options.batch_size * options.accumulation;
  const int64_t steps_per_epoch = data.train.size() / samples_per_step;
  if (steps_per_epoch == 0) return InvalidArgument("the training set is smaller than one step's batch");
  const int64_t total_steps = options.max_steps > 0 ? options.max_steps : options.epochs * steps_per_epoch;
  config.schedule.total_steps = total_steps;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(*graph), config));
  if (!options.save_training_graph.empty()) {
    ONNX_AMP_RETURN_IF_ERROR(SaveModel(trainer->graph().train_model, options.save_training_graph));
    ONNX_AMP_RETURN_IF_ERROR(SaveModel(trainer->update_model(), UpdateGraphPath(options.save_training_graph)));
  }

  DataPosition position;
  position.seed = options.seed;
  const std::filesystem::path checkpoint =
      options.checkpoint_dir.empty() ? std::filesystem::path() : std::filesystem::path(options.checkpoint_dir) / "checkpoint.npz";
  if (!options.checkpoint_dir.empty()) std::filesystem::create_directories(options.checkpoint_dir);
  const bool resumed = options.resume && std::filesystem::exists(checkpoint);
  if (resumed) {
    ONNX_AMP_RETURN_IF_ERROR(LoadCheckpoint(checkpoint, *trainer, position));
    std::fprintf(stderr, "resumed from %s at step %lld\n", checkpoint.string().c_str(),
                 static_cast<long long>(position.global_step));
  }
  Metrics metrics;
  ONNX_AMP_RETURN_IF_ERROR(metrics.Open(options.metrics, resumed));

  const bool tty = isatty(STDERR_FILENO) != 0;
  std::vector<int64_t> order = EpochOrder(data.train.size(), position.seed, position.epoch);
  auto epoch_start = std::chrono::steady_clock::now();
  double epoch_loss = 0.0;
  int64_t epoch_steps = 0;
  int64_t epoch_skipped = 0;
  while (position.global_step < total_steps) {
    std::vector<Batch> micro;
    for (int64_t k = 0; k < options.accumulation; ++k) {
      const int64_t start = (position.batch * options.accumulation + k) * options.batch_size;
      std::span<const int64_t> indices(order.data() + start, static_cast<size_t>(options.batch_size));
      ONNX_AMP_ASSIGN_OR_RETURN(Batch batch, MakeBatch(data.train, indices, sample, graph_options.loss, classes));
      micro.push_back(std::move(batch));
    }
    const auto start = std::chrono::steady_clock::now();
    ONNX_AMP_ASSIGN_OR_RETURN(StepResult step, trainer->Step(micro));
    const double step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++position.batch;
    ++position.global_step;
    if (!step.skipped) epoch_loss += step.loss;
    epoch_steps += !step.skipped;
    epoch_skipped += step.skipped;
    metrics.Write({{"step", position.global_step}, {"loss", step.loss}, {"scale", step.scale},
                   {"skipped", step.skipped}, {"step_ms", step_ms}});
    if (tty || position.global_step % 50 == 0) {
      std::fprintf(stderr, "\r[epoch %lld] step %lld/%lld  loss %.4f  scale %g  %.1f ms/step%s",
                   static_cast<long long>(position.epoch + 1), static_cast<long long>(position.batch),
                   static_cast<long long>(steps_per_epoch), step.loss, step.scale, step_ms, tty ? "" : "\n");
    }

    const bool epoch_done = position.batch == steps_per_epoch;
    if (epoch_done || position.global_step == total_steps) {
      if (tty) std::fputc('\n', stderr);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
      nlohmann::json summary = {{"epoch", position.epoch + 1},
                                {"train_loss", epoch_steps > 0 ? epoch_loss / epoch_steps : NAN},
                                {"loss_scale", trainer->scaler().scale()},
                                {"skipped_steps", epoch_skipped},
                                {"seconds", seconds}};
      std::string eval_text;
      if (data.eval && data.eval->size() > 0) {
        ONNX_AMP_ASSIGN_OR_RETURN(EvalResult eval, EvaluateSet(*trainer, *data.eval, sample, graph_options.loss, classes,
                                                               options.batch_size * 8));
        const double accuracy = static_cast<double>(eval.correct) / static_cast<double>(eval.count);
        summary["eval_loss"] = eval.loss_sum / static_cast<double>(eval.count);
        summary["eval_accuracy"] = accuracy;
        char text[96];
        std::snprintf(text, sizeof(text), "  eval loss %.4f  eval accuracy %.4f",
                      eval.loss_sum / static_cast<double>(eval.count), accuracy);
        eval_text = text;
      }
      std::printf("epoch %lld: train loss %.4f%s  loss scale %g  skipped %lld  %.1f s\n",
                  static_cast<long long>(position.epoch + 1), epoch_steps > 0 ? epoch_loss / epoch_steps : NAN,
                  eval_text.c_str(), trainer->scaler().scale(), static_cast<long long>(epoch_skipped), seconds);
      std::fflush(stdout);
      metrics.Write(summary);
      epoch_loss = 0.0;
      epoch_steps = 0;
      epoch_skipped = 0;
      epoch_start = std::chrono::steady_clock::now();
    }
    if (epoch_done) {
      ++position.epoch;
      position.batch = 0;
      order = EpochOrder(data.train.size(), position.seed, position.epoch);
    }
    const bool save = !checkpoint.empty() && (position.global_step == total_steps ||
                                               (options.checkpoint_every > 0 && position.global_step % options.checkpoint_every == 0));
    if (save) ONNX_AMP_RETURN_IF_ERROR(SaveCheckpoint(checkpoint, *trainer, position));
  }
  if (!options.export_path.empty()) {
    ONNX_AMP_RETURN_IF_ERROR(ExportModel(model, *trainer, options.export_path, options.export_policy));
  }
  return Status::Ok();
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandRunner& runner) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* command = app.add_subcommand("train", "Train a model with float32 master weights and loss scaling");
  command->add_option("MODEL", o->model, "ONNX model file (float32)")->required();
  command->add_option("--data", o->data, "IDX folder (t10k = evaluation) or .npz with x, y [, x_test, y_test]")->required();
  command->add_option("--policy", o->policy, "float32, mixed_float16 or mixed_bfloat16");
  command->add_option("--optimizer", o->optimizer, "sgd, adam, adamw or rmsprop");
  command->add_option("--lr", o->lr, "Learning rate (default: 0.01 for sgd, 0.001 otherwise)");
  command->add_option("--lr-schedule", o->lr_schedule, "constant, step or cosine");
  command->add_option("--momentum", o->momentum, "SGD momentum");
  command->add_flag("--nesterov", o->nesterov, "SGD with Nesterov momentum");
  command->add_option("--batch-size", o->batch_size, "Samples per micro-batch");
  command->add_option("--accumulation-steps", o->accumulation, "Micro-batches per optimizer step");
  auto* epochs = command->add_option("--epochs", o->epochs, "Epochs to train");
  command->add_option("--max-steps", o->max_steps, "Optimizer steps to train")->excludes(epochs);
  command->add_option("--loss", o->loss, "cross_entropy, mse or nll");
  command->add_option("--loss-scale", o->loss_scale, "dynamic or a fixed scale (default: dynamic for mixed_float16)");
  command->add_option("--clip-norm", o->clip_norm, "Clip gradients to this global norm (after unscaling)");
  command->add_option("--seed", o->seed, "Seed of the data shuffle");
  command->add_option("--checkpoint-dir", o->checkpoint_dir, "Folder for checkpoint.npz");
  command->add_option("--checkpoint-every", o->checkpoint_every, "Write a checkpoint every N steps (and at the end)");
  command->add_flag("--resume", o->resume, "Continue from the checkpoint in --checkpoint-dir");
  command->add_option("--export", o->export_path, "Write the trained inference model here");
  command->add_option("--export-policy", o->export_policy, "Policy for --export (default float32)");
  command->add_option("--metrics", o->metrics, "Append one JSON line per step (and per epoch) to this file");
  command->add_option("--max-consecutive-skips", o->max_consecutive_skips, "Stop after this many skipped steps in a row");
  command->add_option("--train-limit", o->train_limit, "Use only the first N training samples");
  command->add_option("--eval-limit", o->eval_limit, "Use only the first N evaluation samples");
  command->add_option("--save-training-graph", o->save_training_graph,
                      "Write the step's two graphs: FILE (forward + loss + backward, run per micro-batch) and "
                      "FILE.update.onnx next to it, FILE's .onnx dropped (unscale-and-check, clipping, optimizer "
                      "update)");
  command->add_option("--threads", o->threads, "Worker threads (0: one per core)")->check(CLI::NonNegativeNumber);
  runner.Bind(*command, [o] { return Train(*o); });
}

}  // namespace onnx_amp
