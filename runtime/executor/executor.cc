#include "runtime/executor/executor.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <new>
#include <optional>

#include "ops/kernel_registry.h"
#include "ops/normalization/batch_statistics.h"
#include "runtime/core/limits.h"
#include "runtime/exec/device.h"
#include "runtime/exec/kernel.h"
#include "runtime/exec/thread_pool.h"
#include "runtime/executor/device_placement.h"
#include "runtime/executor/execution_plan.h"
#include "runtime/executor/memory_pool.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct RunState {
  RunState(MemoryPool& pool, Device* device) : pool(pool), device_pool(SIZE_MAX, device), device(device) {}
  MemoryPool& PoolOf(DeviceKind kind) { return kind == DeviceKind::kCpu ? pool : device_pool; }
  MemoryPool& pool;        // host tensors: the executor's pool, kept from run to run
  MemoryPool device_pool;  // the device's tensors (the device keeps its own cache)
  Device* device;
  RunStats stats;
  ThreadPool* threads = nullptr;
  bool prepack_weights = true;
  const std::vector<bool>* capture_slots = nullptr;  // main graph only
  std::map<std::string, Tensor>* captured = nullptr;
  // ExecutorRunOptions::output_ready, when set (main graph only), and the outputs each slot holds.
  const ExecutorRunOptions::OutputReady* output_ready = nullptr;
  const std::vector<std::vector<size_t>>* outputs_of_slot = nullptr;
};

// Reports the graph outputs `slot` holds to the run's output_ready callback.
Status ReportOutputs(int slot, const Tensor& value, const RunState& state) {
  for (size_t index : (*state.outputs_of_slot)[slot]) {
    ONNX_AMP_RETURN_IF_ERROR((*state.output_ready)(index, value));
  }
  return Status::Ok();
}

// The values of one graph while it runs; bodies chain to the frame of their owner.
struct Frame {
  Frame(const GraphPlan& plan, const Frame* parent) : plan(plan), parent(parent), slots(plan.slot_names.size()) {}

  // Resolves a name through this frame and the enclosing ones.
  const Tensor* Lookup(const std::string& name) const {
    const int slot = plan.FindSlot(name);
    if (slot >= 0 && slots[slot].defined()) return &slots[slot];
    return parent ? parent->Lookup(name) : nullptr;
  }

  const GraphPlan& plan;
  const Frame* parent;
  std::vector<Tensor> slots;
};

std::string NodePrefix(const onnx::NodeProto& node) {
  return "node '" + (node.name().empty() ? std::string("<unnamed>") : node.name()) + "' (" + node.op_type() + ")";
}

Expected<std::vector<Tensor>> RunBody(const GraphPlan& plan, const Frame& parent, std::vector<Tensor> inputs,
                                      RunState& state);
Status RunSteps(Frame& frame, RunState& state);

class NodeContext final : public KernelContext {
 public:
  NodeContext(const PlanStep& step, Frame& frame, RunState& state) : step_(step), frame_(frame), state_(state) {}

  const onnx::NodeProto& node() const override { return *step_.node; }
  int opset() const override { return step_.opset; }
  DeviceKind device() const override { return step_.device; }
  Device* device_context() const override { return state_.device; }

  int num_inputs() const override { return static_cast<int>(step_.inputs.size()); }
  const Tensor* input(int index) const override {
    if (index < 0 || index >= num_inputs() || step_.inputs[index] < 0) return nullptr;
    const Tensor& tensor = frame_.slots[step_.inputs[index]];
    return tensor.defined() ? &tensor : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(step_.outputs.size()); }
  bool output_used(int index) const override {
    return index >= 0 && index < num_outputs() && step_.outputs_used[index];
  }

  Expected<Tensor*> AllocateOutput(int index, DType dtype, const Shape& shape) override {
    if (index < 0) return Error(ErrorCode::kInternal, "output index " + std::to_string(index));
    // The label is built only on error: this runs for every node output.
    Expected<int64_t> elements = CheckedElementCount(shape, "output");
    if (!elements.ok()) {
      return Error(ErrorCode::kInvalidModel, elements.status().message() + " (shape " + ShapeToString(shape) + ")");
    }
    if (DTypeSize(dtype) == 0) return UnsupportedDType(dtype);
    const size_t bytes = static_cast<size_t>(*elements) * DTypeSize(dtype);
    state_.stats.sum_tensor_bytes += bytes;
    Tensor* slot = OutputSlot(index);
    if (index == 0) {
      if (const std::shared_ptr<Buffer>* reusable = InplaceCandidate(dtype, shape)) {
        *slot = Tensor(dtype, shape, *reusable);
        ++state_.stats.inplace_reuses;
        return slot;
      }
    }
    MemoryPool& pool = state_.PoolOf(step_.device);
    std::shared_ptr<Buffer> buffer = pool.Allocate(bytes);
    if (!buffer) {
      // A plan may give a step outputs past its node's (plan_rewrites.h); those have no name.
      const std::string name = index < node().output_size() ? node().output(index) : std::to_string(index);
      if (step_.device != DeviceKind::kCpu) {
        return Error(ErrorCode::kUnsupported, "output '" + name + "' " + ShapeToString(shape) + ": the device has no " +
                                                  std::to_string(bytes) + " bytes left");
      }
      return Error(ErrorCode::kUnsupported,
                   "output '" + name + "' " + ShapeToString(shape) + " needs " + std::to_string(bytes) +
                       " bytes more; the run has allocated " + std::to_string(pool.allocated_bytes()) +
                       " and its memory cap is " + std::to_string(pool.limit_bytes()) + " bytes (--max-memory)");
    }
    *slot = Tensor(dtype, shape, std::move(buffer));
    return slot;
  }

  Expected<Tensor> ScratchFloat32(int64_t elements) override {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(elements, 0)) * sizeof(float);
    std::shared_ptr<Buffer> buffer = state_.pool.Allocate(bytes);
    if (!buffer) {
      return Error(ErrorCode::kUnsupported, "a work buffer of " + std::to_string(bytes) +
                                                " bytes passes the memory cap of " +
                                                std::to_string(state_.pool.limit_bytes()) + " bytes (--max-memory)");
    }
    scratch_buffers_.push_back(buffer.get());
    return Tensor(DType::kFloat32, {elements}, std::move(buffer));
  }

  // Work buffers go back to the pool once the kernel has dropped them.
  void ReleaseScratch() {
    for (const Buffer* buffer : scratch_buffers_) state_.pool.ReleaseIfUnused(buffer);
    scratch_buffers_.clear();
  }

  void SetOutput(int index, Tensor tensor) override {
    if (index < 0) return;
    *OutputSlot(index) = std::move(tensor);
  }

  Expected<std::vector<Tensor>> RunSubgraph(std::string_view attribute, std::vector<Tensor> inputs) override {
    for (const auto& [name, body] : step_.subgraphs) {
      if (name != attribute) continue;
      const Clock::time_point start = Clock::now();
      Expected<std::vector<Tensor>> outputs = RunBody(*body, frame_, std::move(inputs), state_);
      subgraph_seconds_ += SecondsSince(start);
      return outputs;
    }
    return Error(ErrorCode::kInvalidModel, "has no graph attribute '" + std::string(attribute) + "'");
  }

  ThreadPool& threads() override { return *state_.threads; }

  FusedActivation fused_activation() const override { return step_.activation; }
  const Tensor* fused_addend() const override { return input(step_.addend_input); }
  const Tensor* fused_bias() const override { return input(step_.bias_input); }
  bool widens_output() const override { return step_.widened_output; }
  bool fused_relu_grad() const override { return step_.relu_grad; }
  bool relu_of_input() const override { return step_.relu_input; }
  bool pools_output() const override { return step_.pooled_output; }
  int summed_leading_axes() const override { return step_.summed_leading_axes; }
  bool input_channels_last(int index) const override {
    return index >= 0 && index < num_inputs() && ChannelsLast(step_.inputs[index]);
  }
  bool output_channels_last(int index) const override {
    return index >= 0 && index < num_outputs() && ChannelsLast(step_.outputs[index]);
  }
  bool fused_addend_channels_last() const override { return input_channels_last(step_.addend_input); }
  bool input_is_constant(int index) const override {
    if (index < 0 || index >= num_inputs() || step_.inputs[index] < 0) return false;
    return frame_.plan.slot_kinds[step_.inputs[index]] == SlotKind::kInitializer;
  }
  // Without prepacking the kernels keep nothing from run to run.
  std::unique_ptr<KernelState>* state() override { return state_.prepack_weights ? &step_.state : nullptr; }

  double subgraph_seconds() const { return subgraph_seconds_; }

 private:
  bool ChannelsLast(int slot) const {
    const std::vector<bool>& layouts = frame_.plan.channels_last;
    return slot >= 0 && static_cast<size_t>(slot) < layouts.size() && layouts[slot];
  }

  // The frame slot of output `index`; outputs the node omits get scratch storage.
  Tensor* OutputSlot(int index) {
    if (index < num_outputs() && step_.outputs[index] >= 0) return &frame_.slots[step_.outputs[index]];
    scratch_.emplace_back();
    return &scratch_.back();
  }

  // A dying input's buffer that output 0 may overwrite: a node output of this graph with
  // the same dtype and shape, whose last reader is this node, and that nothing else
  // (a view, a capture, the caller) refers to. Any input of a may_inplace kernel; else
  // only a fused addend in output 0's memory order that the node reads through no other
  // input (the Conv adds it into its output's buffer before writing the sum there).
  const std::shared_ptr<Buffer>* InplaceCandidate(DType dtype, const Shape& shape) const {
    for (int index = 0; index < num_inputs(); ++index) {
      const int slot = step_.inputs[index];
      if (!step_.kernel->may_inplace && !IsInplaceAddend(index)) continue;
      if (slot < 0 || frame_.plan.slot_kinds[slot] != SlotKind::kNodeOutput) continue;
      if (std::find(step_.release_after.begin(), step_.release_after.end(), slot) == step_.release_after.end()) continue;
      const Tensor& tensor = frame_.slots[slot];
      if (!tensor.defined() || tensor.dtype() != dtype || tensor.shape() != shape) continue;
      const std::shared_ptr<Buffer>& buffer = tensor.buffer();
      if (!buffer || !state_.PoolOf(step_.device).Owns(buffer.get()) || tensor.raw_data() != buffer->data()) continue;
      // References: the pool's and this slot's.
      if (buffer.use_count() != 2) continue;
      return &buffer;
    }
    return nullptr;
  }

  bool IsInplaceAddend(int index) const {
    if (index != step_.addend_input || input_channels_last(index) != output_channels_last(0)) return false;
    const int slot = step_.inputs[index];
    return std::count(step_.inputs.begin(), step_.inputs.end(), slot) == 1;
  }

  const PlanStep& step_;
  Frame& frame_;
  RunState& state_;
  std::deque<Tensor> scratch_;
  std::vector<const Buffer*> scratch_buffers_;
  double subgraph_seconds_ = 0;
};

void ReleaseSlot(Frame& frame, int slot, RunState& state) {
  Tensor dead = std::move(frame.slots[slot]);
  frame.slots[slot] = Tensor();
  const Buffer* raw = dead.buffer().get();
  const DeviceKind kind = dead.device();
  dead = Tensor();
  if (raw != nullptr) state.PoolOf(kind).ReleaseIfUnused(raw);
}

Status RunSteps(Frame& frame, RunState& state) {
  const GraphPlan& plan = frame.plan;
  const bool capture = frame.parent == nullptr && state.capture_slots != nullptr;
  const bool report = frame.parent == nullptr && state.output_ready != nullptr;
  for (const PlanStep& step : plan.steps) {
    NodeContext context(step, frame, state);
    const Clock::time_point start = Clock::now();
    Status status = step.kernel->compute(context);
    context.ReleaseScratch();
    OpTime& time = state.stats.op_times[step.op_label];
    ++time.calls;
    if (step.device != DeviceKind::kCpu) ++state.stats.device_steps;
    time.seconds += SecondsSince(start) - context.subgraph_seconds();
    if (!status.ok()) {
      const std::string prefix = NodePrefix(*step.node);
      if (status.message().rfind(prefix, 0) == 0) return status;
      return status.WithContext(prefix);
    }
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const int slot = step.outputs[k];
      if (slot < 0) continue;
      if (step.outputs_used[k] && !frame.slots[slot].defined()) {
        return InternalError(NodePrefix(*step.node) + ": output '" + plan.slot_names[slot] + "' was not produced");
      }
      if (capture && (*state.capture_slots)[slot] && frame.slots[slot].defined()) {
        (*state.captured)[plan.slot_names[slot]] = frame.slots[slot];
      }
      if (report && frame.slots[slot].defined()) {
        ONNX_AMP_RETURN_IF_ERROR(ReportOutputs(slot, frame.slots[slot], state));
      }
    }
    for (int slot : step.release_after) ReleaseSlot(frame, slot, state);
    // Tensors made inside bodies die within the control-flow kernel, out of the frames' sight.
    if (!step.subgraphs.empty()) state.pool.ReleaseAllUnused();
  }
  return Status::Ok();
}

// The device copies of the initializers device steps read (device_placement.h).
Status UploadInitializers(GraphPlan& plan, Device* device) {
  for (const auto& [host_slot, device_slot] : plan.device_initializers) {
    for (size_t i = 0; i < plan.initializers.size(); ++i) {
      if (plan.initializers[i].first != host_slot) continue;
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor copy, CopyToDevice(plan.initializers[i].second, *device));
      plan.initializers.emplace_back(device_slot, std::move(copy));
      break;
    }
  }
  return Status::Ok();
}

// `tensor` where the plan wants slot `slot` (the device or the host).
Expected<Tensor> MovedTo(const GraphPlan& plan, int slot, const Tensor& tensor, Device* device) {
  const DeviceKind want = plan.slot_devices.empty() ? DeviceKind::kCpu : plan.slot_devices[slot];
  if (tensor.device() == want || !tensor.defined()) return tensor;
  if (want == DeviceKind::kCpu) return CopyToHost(tensor, device);
  return CopyToDevice(tensor, *device);
}

void FillConstants(const GraphPlan& plan, Frame& frame) {
  for (const auto& [slot, tensor] : plan.initializers) frame.slots[slot] = tensor;
}

Expected<std::vector<Tensor>> RunBody(const GraphPlan& plan, const Frame& parent, std::vector<Tensor> inputs,
                                      RunState& state) {
  const std::string& scope = plan.view->scope_name();
  if (inputs.size() != plan.input_slots.size()) {
    return InvalidModel(scope + ": the body takes " + std::to_string(plan.input_slots.size()) + " inputs, " +
                        std::to_string(inputs.size()) + " given");
  }
  Frame frame(plan, &parent);
  FillConstants(plan, frame);
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[plan.input_slots[i]] = std::move(inputs[i]);
  for (int slot : plan.outer_slots) {
    const Tensor* value = parent.Lookup(plan.slot_names[slot]);
    if (value == nullptr) return InvalidModel(scope + ": outer-scope value '" + plan.slot_names[slot] + "' is not available");
    frame.slots[slot] = *value;
  }
  ONNX_AMP_RETURN_IF_ERROR(RunSteps(frame, state));
  std::vector<Tensor> outputs;
  outputs.reserve(plan.output_slots.size());
  for (int slot : plan.output_slots) {
    if (!frame.slots[slot].defined()) return InvalidModel(scope + ": output '" + plan.slot_names[slot] + "' has no value");
    outputs.push_back(frame.slots[slot]);
  }
  return outputs;
}

}  // namespace

Executor::Executor() = default;
Executor::~Executor() = default;

Expected<std::unique_ptr<Executor>> Executor::Create(const onnx::ModelProto& model, const ExecutorOptions& options) {
  std::unique_ptr<Executor> executor(new Executor());
  ONNX_AMP_ASSIGN_OR_RETURN(executor->view_, BuildModelView(model));
  PlanOptions plan_options;
  plan_options.device_kernels = options.device != nullptr ? &options.device->kernels() : nullptr;
  plan_options.fuse_activations = options.fuse_activations;
  plan_options.channels_last = options.channels_last;
  plan_options.share_batch_statistics = options.share_batch_statistics;
  plan_options.keep_all_values = options.capture_all;
  plan_options.keep_values = options.capture;
  ONNX_AMP_ASSIGN_OR_RETURN(executor->plan_,
                            BuildGraphPlan(executor->view_->main_graph(),
                                           options.kernels ? *options.kernels : CpuKernelRegistry(),
                                           options.device != nullptr ? options.device->kind() : DeviceKind::kCpu,
                                           plan_options));
  GraphPlan& plan = *executor->plan_;
  ONNX_AMP_RETURN_IF_ERROR(UploadInitializers(plan, options.device));
  if (!plan.outer_slots.empty()) {
    return InvalidModel("value '" + plan.slot_names[plan.outer_slots.front()] + "' is read but defined nowhere");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(executor->inputs_, GraphInputSpecs(model.graph()));
  for (const onnx::ValueInfoProto& output : model.graph().output()) executor->output_names_.push_back(output.name());

  executor->PlanOutputReports();
  executor->capture_slots_.assign(plan.slot_names.size(), options.capture_all);
  for (const std::string& name : options.capture) {
    const int slot = plan.FindSlot(name);
    if (slot < 0) return NotFound("capture: the main graph has no value named '" + name + "'");
    executor->capture_slots_[slot] = true;
  }
  executor->threads_ = std::make_unique<ThreadPool>(options.num_threads);
  executor->bind_threads_ = options.bind_threads;
  executor->device_ = options.device;
  executor->outputs_on_host_ = options.outputs_on_host;
  executor->prepack_weights_ = options.prepack_weights;
  executor->pool_ = std::make_unique<MemoryPool>(options.max_memory_bytes > 0 ? options.max_memory_bytes
                                                                               : PhysicalMemoryBytes());
  return executor;
}

void Executor::PlanOutputReports() {
  const GraphPlan& plan = *plan_;
  // An Identity's output is a view of its input, final as soon as the input is: the
  // backward pass names each parameter's gradient with an Identity at the end of the graph,
  // so reporting those at the Identity would report every gradient at the end.
  std::vector<int> source(plan.slot_names.size());
  for (size_t slot = 0; slot < source.size(); ++slot) source[slot] = static_cast<int>(slot);
  for (const PlanStep& step : plan.steps) {
    const bool identity = step.kernel->domain.empty() && step.kernel->op_type == "Identity";
    if (identity && !step.inputs.empty() && step.inputs[0] >= 0 && !step.outputs.empty() && step.outputs[0] >= 0) {
      source[step.outputs[0]] = source[step.inputs[0]];
    }
  }
  outputs_of_slot_.assign(plan.slot_names.size(), {});
  for (size_t i = 0; i < plan.output_slots.size(); ++i) outputs_of_slot_[source[plan.output_slots[i]]].push_back(i);
  // Run() reports the slots no step produces first, in slot order, then each step's outputs.
  for (size_t slot = 0; slot < plan.slot_names.size(); ++slot) {
    if (plan.slot_kinds[slot] == SlotKind::kNodeOutput) continue;
    output_completion_order_.insert(output_completion_order_.end(), outputs_of_slot_[slot].begin(),
                                    outputs_of_slot_[slot].end());
  }
  for (const PlanStep& step : plan.steps) {
    for (int slot : step.outputs) {
      if (slot < 0) continue;
      output_completion_order_.insert(output_completion_order_.end(), outputs_of_slot_[slot].begin(),
                                      outputs_of_slot_[slot].end());
    }
  }
}

Expected<std::unique_ptr<Executor>> Executor::Create(onnx::ModelProto&& model, const ExecutorOptions& options) {
  auto owned = std::make_unique<onnx::ModelProto>(std::move(model));
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Create(*owned, options));
  executor->owned_model_ = std::move(owned);
  return executor;
}

std::vector<std::string> Executor::ChannelsLastValues() const {
  std::vector<std::string> names;
  for (size_t slot = 0; slot < plan_->channels_last.size(); ++slot) {
    if (plan_->channels_last[slot]) names.push_back(plan_->slot_names[slot]);
  }
  return names;
}

std::vector<std::string> Executor::SharedBatchStatistics() const {
  std::vector<std::string> names;
  for (const PlanStep& step : plan_->steps) {
    if (step.node->op_type() != "BatchNormalizationGrad" || static_cast<int>(step.inputs.size()) <= kBatchMeanIndex ||
        step.inputs[kBatchMeanIndex] < 0) {
      continue;
    }
    names.push_back(plan_->slot_names[step.inputs[1]]);
  }
  return names;
}

std::string Executor::FirstHostTransfer() const {
  for (const PlanStep& step : plan_->steps) {
    const bool to_host = step.kernel == &CopyToHostKernelDef();
    if (!to_host && step.kernel != &CopyToDeviceKernelDef()) continue;
    const std::string value = step.inputs.empty() || step.inputs[0] < 0 ? "?" : plan_->slot_names[step.inputs[0]];
    return "value '" + value + "' to the " + (to_host ? "host" : "device") + " for " + NodePrefix(*step.node);
  }
  return "";
}

Expected<RunResult> Executor::Run(const std::map<std::string, Tensor>& feeds, const ExecutorRunOptions& options) {
  ONNX_AMP_RETURN_IF_ERROR(CheckInputs(inputs_, feeds));
  const Clock::time_point start = Clock::now();
  RunResult result;
  // Runs keep the executor's pool and its buffers; a run started while another is in
  // progress on another thread gets a pool of its own.
  std::unique_lock<std::mutex> pool_lock(pool_mutex_, std::try_to_lock);
  std::optional<MemoryPool> own_pool;
  if (!pool_lock.owns_lock()) own_pool.emplace(pool_->limit_bytes());
  MemoryPool& pool = own_pool ? *own_pool : *pool_;
  pool.StartRun();
  if (bind_threads_) threads_->PinTeamOfCallingThread();
  const RuntimeThreadsScope runtime_threads(threads_->num_threads());
  RunState state(pool, device_);
  state.threads = threads_.get();
  state.prepack_weights = prepack_weights_;
  state.capture_slots = &capture_slots_;
  state.captured = &result.captured;
  if (options.output_ready) {
    state.output_ready = &options.output_ready;
    state.outputs_of_slot = &outputs_of_slot_;
  }

  const GraphPlan& plan = *plan_;
  Frame frame(plan, nullptr);
  FillConstants(plan, frame);
  for (int slot : plan.input_slots) {
    auto it = feeds.find(plan.slot_names[slot]);
    if (it == feeds.end()) continue;
    ONNX_AMP_ASSIGN_OR_RETURN(frame.slots[slot], MovedTo(plan, slot, it->second, device_));
  }
  // Captured graph inputs and initializers are never produced by a step.
  for (size_t slot = 0; slot < plan.slot_names.size(); ++slot) {
    if (capture_slots_[slot] && plan.slot_kinds[slot] != SlotKind::kNodeOutput && frame.slots[slot].defined()) {
      result.captured[plan.slot_names[slot]] = frame.slots[slot];
    }
    // Outputs no step produces are final before the first step.
    const bool produced_by_no_step = plan.slot_kinds[slot] != SlotKind::kNodeOutput;
    if (state.output_ready != nullptr && produced_by_no_step && frame.slots[slot].defined()) {
      ONNX_AMP_RETURN_IF_ERROR(ReportOutputs(static_cast<int>(slot), frame.slots[slot], state));
    }
  }
  try {
    ONNX_AMP_RETURN_IF_ERROR(RunSteps(frame, state));
  } catch (const std::bad_alloc&) {
    return Unsupported("out of memory while running the model");
  }
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const Tensor& tensor = frame.slots[plan.output_slots[i]];
    if (!tensor.defined()) return InvalidModel("graph output '" + output_names_[i] + "' has no value");
    if (!outputs_on_host_) {
      result.outputs.push_back({output_names_[i], tensor});
      continue;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor host, CopyToHost(tensor, device_));
    result.outputs.push_back({output_names_[i], std::move(host)});
  }
  if (outputs_on_host_) {
    for (auto& [name, tensor] : result.captured) {
      ONNX_AMP_ASSIGN_OR_RETURN(tensor, CopyToHost(tensor, device_));
    }
  }
  state.stats.total_seconds = SecondsSince(start);
  state.stats.peak_live_bytes = state.pool.peak_live_bytes() + state.device_pool.peak_live_bytes();
  state.stats.allocated_bytes = state.pool.allocated_bytes() + state.device_pool.allocated_bytes();
  state.stats.buffer_reuses = state.pool.reuse_count() + state.device_pool.reuse_count();
  result.stats = std::move(state.stats);
  return result;
}

}  // namespace onnx_amp
