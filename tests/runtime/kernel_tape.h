// Test utility: what a CUDA graph capture records, for the host-backed test device
// (host_backed_device.h). A device kernel called during a capture is recorded, not run:
// the kernel computes once so that its outputs get their shapes and addresses, then
// every input it may have written (the in-place optimizer updates) gets its bytes back,
// as if nothing had run. A replay runs the recorded kernels again, in order, on the same
// addresses, the way a CUDA graph replays its kernel nodes: device inputs are read where
// they were at capture (so a caller that lets them move, or writes a per-step value
// elsewhere, gets stale data, as on a GPU), host inputs as they were at capture (their
// values are baked into a CUDA kernel's parameters).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/exec/kernel.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp::testing {

class KernelTape {
 public:
  // Records `compute` called with `context` (see the top of this file).
  Status Record(KernelFn compute, KernelContext& context) {
    Entry entry;
    entry.compute = compute;
    entry.node = &context.node();
    entry.opset = context.opset();
    entry.device = context.device();
    entry.activation = context.fused_activation();
    entry.widens_output = context.widens_output();
    std::vector<std::vector<char>> saved;
    for (int i = 0; i < context.num_inputs(); ++i) {
      const Tensor* input = context.input(i);
      entry.inputs.push_back(input == nullptr ? Tensor() : Baked(*input));
      const char* bytes = input == nullptr ? nullptr : static_cast<const char*>(input->raw_data());
      saved.emplace_back(bytes, bytes == nullptr ? bytes : bytes + input->bytes());
    }
    Recording recording(context);
    ONNX_AMP_RETURN_IF_ERROR(compute(recording));
    for (int i = 0; i < context.num_inputs(); ++i) {
      const Tensor* input = context.input(i);
      if (input != nullptr && !saved[i].empty()) std::memcpy(const_cast<void*>(input->raw_data()), saved[i].data(), saved[i].size());
    }
    for (int k = 0; k < context.num_outputs(); ++k) {
      entry.outputs_used.push_back(context.output_used(k));
      entry.outputs.push_back(recording.Output(k));
    }
    entries_.push_back(std::move(entry));
    return Status::Ok();
  }

  // A device-to-device copy queued during the capture.
  void RecordCopy(void* destination, const void* source, size_t bytes) {
    Entry entry;
    entry.copy = Copy{destination, source, bytes};
    entries_.push_back(std::move(entry));
  }

  Status Replay(Device* device) const {
    for (const Entry& entry : entries_) {
      if (entry.copy) {
        std::memmove(entry.copy->destination, entry.copy->source, entry.copy->bytes);
        continue;
      }
      Replaying context(entry, device, threads_);
      ONNX_AMP_RETURN_IF_ERROR(entry.compute(context));
    }
    return Status::Ok();
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Copy {
    void* destination;
    const void* source;
    size_t bytes;
  };
  struct Entry {
    KernelFn compute = nullptr;
    const onnx::NodeProto* node = nullptr;
    int opset = 0;
    DeviceKind device = DeviceKind::kCpu;
    FusedActivation activation;
    bool widens_output = false;
    std::vector<Tensor> inputs;   // device tensors: views of their blocks; host tensors: copies
    std::vector<Tensor> outputs;  // views of where the kernel left them
    std::vector<bool> outputs_used;
    std::optional<Copy> copy;
  };

  // Blocks seen through a view are released by nobody.
  class Unowned final : public BufferOwner {
   public:
    void Release(void*, size_t) override {}
  };

  static Tensor View(DType dtype, const Shape& shape, void* data, DeviceKind device) {
    static const std::shared_ptr<BufferOwner> unowned = std::make_shared<Unowned>();
    const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
    return Tensor(dtype, shape, Buffer::Adopt(data, bytes, device, unowned));
  }

  // What a replay reads for `input`: its address on the device, its value on the host.
  static Tensor Baked(const Tensor& input) {
    if (input.device() != DeviceKind::kCpu) {
      return View(input.dtype(), input.shape(), const_cast<void*>(input.raw_data()), input.device());
    }
    Tensor copy = Tensor::Empty(input.dtype(), input.shape());
    if (input.bytes() > 0) std::memcpy(copy.raw_data(), input.raw_data(), input.bytes());
    return copy;
  }

  // Forwards to the executor's context and notes where each output went.
  class Recording final : public KernelContext {
   public:
    explicit Recording(KernelContext& inner) : inner_(inner) {}
    const onnx::NodeProto& node() const override { return inner_.node(); }
    int opset() const override { return inner_.opset(); }
    DeviceKind device() const override { return inner_.device(); }
    int num_inputs() const override { return inner_.num_inputs(); }
    const Tensor* input(int index) const override { return inner_.input(index); }
    int num_outputs() const override { return inner_.num_outputs(); }
    bool output_used(int index) const override { return inner_.output_used(index); }
    Expected<Tensor*> AllocateOutput(int index, DType dtype, const Shape& shape) override {
      Expected<Tensor*> tensor = inner_.AllocateOutput(index, dtype, shape);
      if (tensor.ok()) allocated_.emplace_back(index, *tensor);
      return tensor;
    }
    void SetOutput(int index, Tensor tensor) override {
      // A CPU kernel's own host tensor dies with the run; a device kernel's output is
      // device memory (here: the capture's pool), where the replay writes it again.
      Device* device = inner_.device_context();
      if (tensor.device() == DeviceKind::kCpu && device != nullptr) {
        Expected<std::shared_ptr<Buffer>> buffer = device->Allocate(tensor.bytes());
        if (buffer.ok()) {
          if (tensor.bytes() > 0) std::memcpy((*buffer)->data(), tensor.raw_data(), tensor.bytes());
          tensor = Tensor(tensor.dtype(), tensor.shape(), std::move(*buffer));
        }
      }
      set_.emplace_back(index, tensor);
      inner_.SetOutput(index, std::move(tensor));
    }
    Expected<Tensor> ScratchFloat32(int64_t elements) override { return inner_.ScratchFloat32(elements); }
    Expected<std::vector<Tensor>> RunSubgraph(std::string_view, std::vector<Tensor>) override {
      return InternalError("a control-flow node inside a capture");
    }
    ThreadPool& threads() override { return inner_.threads(); }
    Device* device_context() const override { return inner_.device_context(); }
    FusedActivation fused_activation() const override { return inner_.fused_activation(); }
    bool widens_output() const override { return inner_.widens_output(); }
    bool input_is_constant(int index) const override { return inner_.input_is_constant(index); }

    // The last tensor given for output `index` (undefined when none was).
    Tensor Output(int index) const {
      Tensor found;
      for (const auto& [k, tensor] : allocated_) {
        if (k == index) found = View(tensor->dtype(), tensor->shape(), tensor->raw_data(), tensor->device());
      }
      for (const auto& [k, tensor] : set_) {
        if (k == index) found = View(tensor.dtype(), tensor.shape(), const_cast<void*>(tensor.raw_data()), tensor.device());
      }
      return found;
    }

   private:
    KernelContext& inner_;
    std::vector<std::pair<int, Tensor*>> allocated_;
    std::vector<std::pair<int, Tensor>> set_;
  };

  // A recorded kernel's context on replay: the recorded inputs, outputs where they were.
  class Replaying final : public KernelContext {
   public:
    Replaying(const Entry& entry, Device* device, ThreadPool& threads)
        : entry_(entry), device_(device), threads_(threads) {}
    const onnx::NodeProto& node() const override { return *entry_.node; }
    int opset() const override { return entry_.opset; }
    DeviceKind device() const override { return entry_.device; }
    int num_inputs() const override { return static_cast<int>(entry_.inputs.size()); }
    const Tensor* input(int index) const override {
      if (index < 0 || index >= num_inputs() || !entry_.inputs[index].defined()) return nullptr;
      return &entry_.inputs[index];
    }
    int num_outputs() const override { return static_cast<int>(entry_.outputs.size()); }
    bool output_used(int index) const override { return index >= 0 && index < num_outputs() && entry_.outputs_used[index]; }
    Expected<Tensor*> AllocateOutput(int index, DType dtype, const Shape& shape) override {
      const Tensor& recorded = entry_.outputs.at(index);
      if (!recorded.defined() || recorded.dtype() != dtype || recorded.shape() != shape) {
        return InternalError("a replayed kernel asks for output " + std::to_string(index) + " of another shape");
      }
      outputs_.push_back(recorded);
      return &outputs_.back();
    }
    void SetOutput(int index, Tensor tensor) override {
      const Tensor& recorded = entry_.outputs.at(index);
      if (recorded.defined() && recorded.raw_data() != tensor.raw_data() && recorded.bytes() == tensor.bytes()) {
        std::memcpy(const_cast<void*>(recorded.raw_data()), tensor.raw_data(), tensor.bytes());
      }
    }
    Expected<std::vector<Tensor>> RunSubgraph(std::string_view, std::vector<Tensor>) override {
      return InternalError("a control-flow node inside a capture");
    }
    ThreadPool& threads() override { return threads_; }
    Device* device_context() const override { return device_; }
    FusedActivation fused_activation() const override { return entry_.activation; }
    bool widens_output() const override { return entry_.widens_output; }

   private:
    const Entry& entry_;
    Device* device_;
    ThreadPool& threads_;
    std::deque<Tensor> outputs_;
  };

  std::vector<Entry> entries_;
  mutable ThreadPool threads_{1};
};

}  // namespace onnx_amp::testing
