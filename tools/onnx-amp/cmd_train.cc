// `onnx-amp train MODEL --data PATH [...]`: trains a float32 model on the CPU executor
// (or, with --device cuda, on the GPU) with float32 master weights, optionally under a
// mixed policy with loss scaling. This file parses the flags, converts the model for
// the policy, and prints; the run itself
// is runtime/train (training_loop.h): each step runs the training graph per
// micro-batch, then the update graph (trainer.h). Progress goes to stderr, a summary per
// epoch to stdout, one JSON line per step to --metrics; checkpoints are written
// atomically and --resume continues bit-identically. Under mpirun each process is one
// data-parallel rank (train_distributed.h), on the CPU or on its own GPU.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "converter/convert_model.h"
#include "runtime/executor/run_stats.h"
#include "runtime/onnx/model_io.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_graph.h"
#include "runtime/train/training_loop.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/device_flag.h"
#include "tools/onnx-amp/memory_flag.h"
#include "tools/onnx-amp/train_distributed.h"

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
  std::string loss = "cross_entropy";
  std::string loss_scale = "";  // "" : dynamic for float16, off otherwise
  TrainingRunOptions run;
  std::string export_path;
  std::string export_policy = "float32";
  int32_t max_consecutive_skips = 0;
  float clip_norm = 0.0f;
  std::string lr_schedule = "constant";
  int64_t train_limit = 0;
  int64_t eval_limit = 0;
  std::string save_training_graph;
  int threads = 0;
  bool stats = false;
  bool weight_copies = false;
  std::string max_memory;
  DeviceFlags device;
  DistributedFlags distributed;
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

Expected<TrainerConfig> MakeTrainerConfig(const TrainOptions& options, PolicyKind policy, int64_t total_steps) {
  TrainerConfig config;
  ONNX_AMP_ASSIGN_OR_RETURN(config.optimizer.kind, ParseOptimizerKind(options.optimizer));
  config.optimizer.learning_rate =
      options.lr >= 0.0f ? options.lr : (config.optimizer.kind == OptimizerKind::kSgd ? 0.01f : 0.001f);
  config.optimizer.momentum = options.momentum;
  config.optimizer.nesterov = options.nesterov;
  ONNX_AMP_ASSIGN_OR_RETURN(config.scaler, ScalerConfig(options, policy));
  config.clip_norm = options.clip_norm;
  config.num_threads = options.threads;
  config.weight_copies = options.weight_copies;
  ONNX_AMP_ASSIGN_OR_RETURN(config.max_memory_bytes, ParseMaxMemoryFlag(options.max_memory));
  ONNX_AMP_ASSIGN_OR_RETURN(config.schedule.kind, ParseLrScheduleKind(options.lr_schedule));
  config.schedule.total_steps = total_steps;
  return config;
}

// `model` converted to `policy` (unchanged for float32).
Expected<onnx::ModelProto> ConvertForPolicy(onnx::ModelProto model, PolicyKind policy, ConvertTarget target) {
  if (policy == PolicyKind::kFloat32) return model;
  ConvertOptions convert;
  convert.policy.kind = policy;
  convert.target = target;
  ONNX_AMP_RETURN_IF_ERROR(convert.policy.Compile());
  ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult converted, ConvertModel(std::move(model), convert));
  return std::move(converted.model);
}

// The training graphs of `model` and the model without its parameters' data (for the
// export).
struct PreparedTraining {
  TrainingGraph graph;
  onnx::ModelProto inference;
};

// Parameters lifted to float32 inputs, the forward graph converted to the policy
// (onnx-amp target: the fused training ops are ours anyway), the loss and the backward
// pass appended.
Expected<PreparedTraining> TrainingGraphFor(onnx::ModelProto model, PolicyKind policy, LossKind loss) {
  if (policy != PolicyKind::kFloat32 && policy != PolicyKind::kMixedFloat16 &&
      policy != PolicyKind::kMixedBFloat16) {
    return InvalidArgument("training policy '" + std::string(PolicyKindName(policy)) +
                           "': expected float32, mixed_float16 or mixed_bfloat16");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(TrainableModel trainable, PrepareTrainableModel(std::move(model), loss));
  ONNX_AMP_ASSIGN_OR_RETURN(trainable.forward,
                            ConvertForPolicy(std::move(trainable.forward), policy, ConvertTarget::kOnnxAmp));
  onnx::ModelProto inference = std::move(trainable.inference);
  ONNX_AMP_ASSIGN_OR_RETURN(TrainingGraph graph, BuildTrainingGraph(std::move(trainable), loss));
  return PreparedTraining{std::move(graph), std::move(inference)};
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
  ONNX_AMP_RETURN_IF_ERROR(trainer.MoveStateToHost());
  ONNX_AMP_ASSIGN_OR_RETURN(onnx::ModelProto model, WithTrainedWeights(original, trainer.weights()));
  ONNX_AMP_ASSIGN_OR_RETURN(PolicyKind policy, ParsePolicyKind(policy_name));
  ONNX_AMP_ASSIGN_OR_RETURN(model, ConvertForPolicy(std::move(model), policy, ConvertTarget::kPortable));
  return SaveModel(model, path);
}

// Progress on stderr (every step on a terminal, else every 50th), a line per epoch on stdout.
TrainingCallbacks PrintingCallbacks() {
  const bool tty = isatty(STDERR_FILENO) != 0;
  TrainingCallbacks callbacks;
  callbacks.resumed = [](const std::filesystem::path& checkpoint, int64_t step) {
    std::fprintf(stderr, "resumed from %s at step %lld\n", checkpoint.string().c_str(), static_cast<long long>(step));
  };
  callbacks.step_done = [tty](const StepProgress& p) {
    if (!p.result.note.empty()) std::fprintf(stderr, "%s%s\n", tty ? "\n" : "", p.result.note.c_str());
    if (!tty && p.global_step % 50 != 0) return;
    std::fprintf(stderr, "\r[epoch %lld] step %lld/%lld  loss %.4f  scale %g  %.1f ms/step%s",
                 static_cast<long long>(p.epoch), static_cast<long long>(p.batch),
                 static_cast<long long>(p.steps_per_epoch), p.result.loss, p.result.scale, p.milliseconds,
                 tty ? "" : "\n");
  };
  callbacks.epoch_done = [tty](const EpochSummary& e) {
    if (tty) std::fputc('\n', stderr);
    char eval[96] = "";
    if (e.eval_accuracy) {
      std::snprintf(eval, sizeof(eval), "  eval loss %.4f  eval accuracy %.4f", *e.eval_loss, *e.eval_accuracy);
    }
    std::printf("epoch %lld: train loss %.4f%s  loss scale %g  skipped %lld  %.1f s\n",
                static_cast<long long>(e.epoch), e.train_loss, eval, e.loss_scale,
                static_cast<long long>(e.skipped_steps), e.seconds);
    std::fflush(stdout);
  };
  return callbacks;
}

// --stats: the op types' time per step, on stdout after the run.
void PrintStepStats(const OpTimeTotals& op_times, int64_t timed_steps) {
  if (timed_steps < 1) {
    std::fprintf(stderr, "--stats: no step after the first ran, and the first (which builds the kernels) is not timed\n");
    return;
  }
  std::printf("time per op type, per step (this run's steps 2-%lld; step graph and update graph, evaluation left "
              "out):\n%s",
              static_cast<long long>(timed_steps + 1), FormatOpTimesPer(op_times, timed_steps, "step").c_str());
  std::fflush(stdout);
}

// `distributed`: null for a plain run; under mpirun, this rank's part of the job.
Status TrainRank(const TrainOptions& options, DistributedTraining* distributed) {
  ONNX_AMP_ASSIGN_OR_RETURN(onnx::ModelProto model, LoadModel(options.model));
  ONNX_AMP_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options.data));
  data.train = TakeFirst(data.train, options.train_limit);
  if (data.eval) data.eval = TakeFirst(*data.eval, options.eval_limit);
  const int ranks = distributed != nullptr ? distributed->ranks() : 1;
  const bool writer = distributed == nullptr || distributed->writes_files();
  ONNX_AMP_ASSIGN_OR_RETURN(const StepPlan plan, PlanSteps(options.run, data.train.size(), ranks));

  ONNX_AMP_ASSIGN_OR_RETURN(const PolicyKind policy, ParsePolicyKind(options.policy));
  ONNX_AMP_ASSIGN_OR_RETURN(const LossKind loss, ParseLossKind(options.loss));
  Expected<PreparedTraining> prepared = TrainingGraphFor(std::move(model), policy, loss);
  if (!prepared.ok()) return prepared.status().WithContext(options.model);
  ONNX_AMP_ASSIGN_OR_RETURN(TrainerConfig config, MakeTrainerConfig(options, policy, plan.total_steps));
  // Under mpirun the rank owns its device (its own GPU), else this run does.
  std::unique_ptr<Device> device;
  if (distributed != nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(config.device, distributed->OpenDevice(options.device));
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(device, OpenDevice(options.device));
    config.device = device.get();
  }
  config.capture_steps = !options.device.no_cuda_graph;
  if (distributed != nullptr && options.threads == 0) config.num_threads = distributed->DefaultThreads();
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(prepared->graph), config));
  if (options.weight_copies && writer && !trainer->keeps_weight_copies()) {
    std::fprintf(stderr, "note: --weight-copies changes nothing here: %s\n",
                 config.device != nullptr ? "on a GPU the step casts its weights itself"
                                          : "the training graph casts no weight to float16 or bfloat16");
  }
  if (distributed != nullptr) {
    trainer->set_replica_sync(distributed->sync());
    if (writer && distributed->ranks() > 1) {
      const std::string line = distributed->Describe(options.run.batch_size, options.run.accumulation_steps);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  if (!options.save_training_graph.empty() && writer) {
    ONNX_AMP_RETURN_IF_ERROR(SaveModel(trainer->graph().train_model, options.save_training_graph));
    ONNX_AMP_RETURN_IF_ERROR(SaveModel(trainer->update_model(), UpdateGraphPath(options.save_training_graph)));
  }
  TrainingCallbacks callbacks = writer ? PrintingCallbacks() : TrainingCallbacks{};
  int64_t steps_done = 0;
  if (options.stats && writer) {
    callbacks.step_done = [&trainer, &steps_done, print = callbacks.step_done](const StepProgress& p) {
      if (print) print(p);
      // The first step builds the kernels (oneDNN primitives, packed weights): not counted.
      if (++steps_done == 1) trainer->ResetOpTimes();
    };
  }
  ONNX_AMP_RETURN_IF_ERROR(RunTraining(*trainer, data, options.run, callbacks));
  if (options.stats && writer) PrintStepStats(trainer->op_times(), steps_done - 1);
  if (distributed != nullptr && distributed->sync() != nullptr && writer) {
    std::fprintf(stderr, "%s\n", distributed->DescribeVolume().c_str());
  }
  if (!options.export_path.empty() && writer) {
    ONNX_AMP_RETURN_IF_ERROR(ExportModel(prepared->inference, *trainer, options.export_path, options.export_policy));
  }
  return Status::Ok();
}

Status Train(const TrainOptions& options) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<DistributedTraining> distributed,
                            DistributedTraining::StartIfLaunched(options.distributed));
  Status status = TrainRank(options, distributed.get());
  if (!status.ok() && distributed != nullptr) distributed->Abort(status);
  return status;
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandRunner& runner) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* command = app.add_subcommand(
      "train", "Train a model with float32 master weights and loss scaling (under mpirun -np N: data parallel)");
  command->add_option("MODEL", o->model, "ONNX model file (float32)")->required();
  command->add_option("--data", o->data, "IDX folder (t10k = evaluation) or .npz with x, y [, x_test, y_test]")->required();
  command->add_option("--policy", o->policy, "float32, mixed_float16 or mixed_bfloat16");
  command->add_option("--optimizer", o->optimizer, "sgd, adam, adamw or rmsprop");
  command->add_option("--lr", o->lr, "Learning rate (default: 0.01 for sgd, 0.001 otherwise)");
  command->add_option("--lr-schedule", o->lr_schedule, "constant, step or cosine");
  command->add_option("--momentum", o->momentum, "SGD momentum");
  command->add_flag("--nesterov", o->nesterov, "SGD with Nesterov momentum");
  command->add_option("--batch-size", o->run.batch_size, "Samples per micro-batch");
  command->add_option("--accumulation-steps", o->run.accumulation_steps, "Micro-batches per optimizer step");
  command->add_flag("--weight-copies", o->weight_copies,
                    "Under a mixed policy on the CPU, keep the weights' float16/bfloat16 copies between steps, "
                    "rewritten by the optimizer update, instead of casting every weight in each micro-batch: faster "
                    "with --accumulation-steps above 1, at the cost of the copies' memory");
  auto* epochs = command->add_option("--epochs", o->run.epochs, "Epochs to train");
  command->add_option("--max-steps", o->run.max_steps, "Optimizer steps to train")->excludes(epochs);
  command->add_option("--loss", o->loss, "cross_entropy, mse or nll");
  command->add_option("--loss-scale", o->loss_scale, "dynamic or a fixed scale (default: dynamic for mixed_float16)");
  command->add_option("--clip-norm", o->clip_norm, "Clip gradients to this global norm (after unscaling)");
  command->add_option("--seed", o->run.seed, "Seed of the data shuffle");
  command->add_option("--checkpoint-dir", o->run.checkpoint_dir, "Folder for checkpoint.npz");
  command->add_option("--checkpoint-every", o->run.checkpoint_every, "Write a checkpoint every N steps (and at the end)");
  command->add_flag("--resume", o->run.resume, "Continue from the checkpoint in --checkpoint-dir");
  command->add_option("--export", o->export_path, "Write the trained inference model here");
  command->add_option("--export-policy", o->export_policy, "Policy for --export (default float32)");
  command->add_option("--metrics", o->run.metrics, "Append one JSON line per step (and per epoch) to this file");
  command->add_option("--max-consecutive-skips", o->max_consecutive_skips, "Stop after this many skipped steps in a row");
  command->add_option("--train-limit", o->train_limit, "Use only the first N training samples");
  command->add_option("--eval-limit", o->eval_limit, "Use only the first N evaluation samples");
  command->add_option("--save-training-graph", o->save_training_graph,
                      "Write the step's two graphs: FILE (forward + loss + backward, run per micro-batch) and "
                      "FILE.update.onnx next to it, FILE's .onnx dropped (unscale-and-check, clipping, optimizer "
                      "update; with --weight-copies it also rewrites each weight's low-precision copy, <name>.copy, "
                      "which the step reads in place of FILE's weight Casts)");
  command->add_option("--threads", o->threads, "Worker threads (0: one per core)")->check(CLI::NonNegativeNumber);
  command->add_flag("--stats", o->stats,
                    "After the run, print the time per op type per step (the first step, which builds the kernels, "
                    "left out)");
  AddMaxMemoryFlag(*command, o->max_memory);
  AddDeviceFlags(*command, o->device);
  AddCudaGraphFlag(*command, o->device);
  AddDistributedFlags(*command, o->distributed);
  runner.Bind(*command, [o] { return Train(*o); });
}

}  // namespace onnx_amp
