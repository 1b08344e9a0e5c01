// The CPU executor: loads a model into an execution plan (topological order, kernels
// resolved up front, buffer reuse at each tensor's last use) and runs it on named
// inputs. Every node without a kernel is reported when the executor is created; fed
// inputs are checked before any node runs. Intermediate tensors of the main graph can
// be captured by name (validation compares them one by one). A Relu / LeakyRelu / Clip
// that alone reads a Conv, Gemm or MatMul output runs inside that node's kernel, and
// constant weights stay in oneDNN's layout between runs; neither changes a number.
#pragma once

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
  bool capture_all = false;        // keep every value of the main graph
  std::vector<std::string> capture;  // keep these values of the main graph
  // Fold a Relu / LeakyRelu / Clip into the Conv, Gemm or MatMul whose output it alone
  // reads (never across a captured value); the result is bit-identical.
  bool fuse_activations = true;
  // Keep constant (initializer) weights in oneDNN's preferred layout from run to run.
  bool prepack_weights = true;
  // Cap on the bytes held for the tensors the nodes produce (0: this machine's physical
  // memory); buffers are kept from run to run, so this is what the largest run needs. A
  // node output that would pass it fails the run with an error naming the node and the
  // output.
  size_t max_memory_bytes = 0;
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

  Expected<RunResult> Run(const std::map<std::string, Tensor>& feeds);

 private:
  Executor();
  std::unique_ptr<onnx::ModelProto> owned_model_;
  std::unique_ptr<ModelView> view_;
  std::unique_ptr<GraphPlan> plan_;
  std::unique_ptr<ThreadPool> threads_;
  std::vector<InputSpec> inputs_;
  std::vector<std::string> output_names_;
  std::vector<bool> capture_slots_;
  Device* device_ = nullptr;
  bool outputs_on_host_ = true;
  bool prepack_weights_ = true;
  // Intermediate buffers kept from run to run (memory_pool.h).
  std::unique_ptr<MemoryPool> pool_;
  std::mutex pool_mutex_;
};

}  // namespace onnx_amp
