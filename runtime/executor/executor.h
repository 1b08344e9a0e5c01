// The CPU executor: loads a model into an execution plan (topological order, kernels
// resolved up front, buffer reuse at each tensor's last use) and runs it on named
// inputs. Every node without a kernel is reported when the executor is created; fed
// inputs are checked before any node runs. Intermediate tensors of the main graph can
// be captured by name (validation compares them one by one). A Relu / LeakyRelu / Clip
// that alone reads a Conv, Gemm or MatMul output runs inside that node's kernel, and
// constant weights stay in oneDNN's layout between runs; neither changes a number.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/input_spec.h"
#include "runtime/executor/run_stats.h"
#include "runtime/io/named_tensor.h"

namespace onnx { class ModelProto; }

namespace onnx_amp {

class Device;
class KernelRegistry;
class MemoryPool;
class ModelView;
class ThreadPool;
struct GraphPlan;

struct ExecutorOptions {
  const KernelRegistry* kernels = nullptr;  // nullptr: CpuKernelRegistry()
  // Runs the nodes the device has kernels for on it (nullptr: everything on the CPU);
  // the device must outlive the executor. Feeds may be host or device tensors.
  Device* device = nullptr;
  // Hand graph outputs and captured values back as host tensors (else where they are).
  bool outputs_on_host = true;
  int num_threads = 0;             // 0: one per hardware thread
  // When the threads take every CPU the process may run on, pin each to its own CPU, the
  // calling thread of a run included (ThreadPool::PinTeamOfCallingThread: an unpinned
  // worker woken after idle can wait behind the caller's spin).
  bool bind_threads = true;
  bool capture_all = false;        // keep every value of the main graph
  std::vector<std::string> capture;  // keep these values of the main graph
  // Fold a Relu / LeakyRelu / Clip into the Conv, Gemm or MatMul whose output it alone
  // reads (never across a captured value); the result is bit-identical.
  bool fuse_activations = true;
  // With fuse_activations: keep the activations passed between convolutions and max
  // pools in channels-last order, the one oneDNN's convolutions compute in, instead of
  // reordering them to and from NCHW around each one; the result is bit-identical.
  bool channels_last = true;
  // With channels_last: a training-mode BatchNormalization hands its batch mean and
  // variance to its gradient, which then makes one pass fewer over X; bit-identical.
  bool share_batch_statistics = true;
  // Keep constant (initializer) weights in oneDNN's preferred layout from run to run.
  bool prepack_weights = true;
  // Cap on the bytes held for the tensors the nodes produce (0: this machine's physical
  // memory); buffers are kept from run to run, so this is what the largest run needs. A
  // node output that would pass it fails the run with an error naming the node and the
  // output.
  size_t max_memory_bytes = 0;
};

// What one run does besides computing its outputs.
struct ExecutorRunOptions {
  // Called on the running thread as soon as graph output `index` (declaration order) has
  // its final value: when the step producing it has finished, or for an output made by
  // Identity, the step producing the value it views (before the run, for a graph input or
  // an initializer). Nothing writes that value while the callee holds the tensor, so it may
  // keep it and read it while the later steps run (data-parallel training starts a
  // gradient's all-reduce there). The tensor is where the step left it: on a device, its
  // work may still be queued. An error stops the run and is its result. Empty: no cost.
  using OutputReady = std::function<Status(size_t index, const Tensor& value)>;
  OutputReady output_ready;
};

struct RunResult {
  std::vector<NamedTensor> outputs;        // the graph outputs, in declaration order
  std::map<std::string, Tensor> captured;  // by value name
  RunStats stats;
};

class Executor {
 public:
  // `model` must outlive the executor and stay unchanged. Errors: InvalidModel for a
  // malformed graph or initializer; Unsupported listing every node without a CPU kernel,
  // or for non-tensor inputs; NotFound for a capture name that is no value of the graph.
  static Expected<std::unique_ptr<Executor>> Create(const onnx::ModelProto& model,
                                                    const ExecutorOptions& options = {});
  // Takes the model over (a temporary needs no outside owner).
  static Expected<std::unique_ptr<Executor>> Create(onnx::ModelProto&& model, const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The graph inputs (those backed by an initializer are optional to feed).
  const std::vector<InputSpec>& inputs() const { return inputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // Graph output indices in the order a run finalises them (ExecutorRunOptions::output_ready's
  // order): outputs that are graph inputs or initializers first, then by producing step.
  const std::vector<size_t>& output_completion_order() const { return output_completion_order_; }

  Expected<RunResult> Run(const std::map<std::string, Tensor>& feeds, const ExecutorRunOptions& options = {});

  // On a device: the first copy step of the plan, where a value crosses between the
  // host and the device in every run ("value 'x' to the host for node 'n' (Op)"); ""
  // when none does (a run is then device work only: it can be captured in a graph).
  std::string FirstHostTransfer() const;

  // The main-graph values the plan stores channels-last (plan_layouts.h), in slot order.
  std::vector<std::string> ChannelsLastValues() const;

  // The main-graph values whose BatchNormalization hands its batch statistics to the
  // gradient (plan_rewrites.h, ShareBatchStatistics), in step order.
  std::vector<std::string> SharedBatchStatistics() const;

 private:
  Executor();
  // Fills outputs_of_slot_ and output_completion_order_ from the plan.
  void PlanOutputReports();

  std::unique_ptr<onnx::ModelProto> owned_model_;
  std::unique_ptr<ModelView> view_;
  std::unique_ptr<GraphPlan> plan_;
  std::unique_ptr<ThreadPool> threads_;
  std::vector<InputSpec> inputs_;
  std::vector<std::string> output_names_;
  std::vector<size_t> output_completion_order_;
  // Main-graph slot -> the graph outputs reported when it is final (most slots: none).
  std::vector<std::vector<size_t>> outputs_of_slot_;
  std::vector<bool> capture_slots_;
  Device* device_ = nullptr;
  bool outputs_on_host_ = true;
  bool prepack_weights_ = true;
  bool bind_threads_ = true;
  // Intermediate buffers kept from run to run (memory_pool.h).
  std::unique_ptr<MemoryPool> pool_;
  std::mutex pool_mutex_;
};

}  // namespace onnx_amp
