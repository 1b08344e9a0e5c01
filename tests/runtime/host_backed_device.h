// Test utility: a Device of kind kCuda whose memory is host memory (through the real
// CachingAllocator) and whose kernels are CPU kernels registered for kCuda, so that the
// device path of the executor and the trainer (placement, copy steps, device pools,
// state moves) runs and is checked on a machine without a GPU. It counts the copies in
// each direction. With `capture` on it also takes part in graph capture the way the
// CUDA device does: the caching pool's capture mode, no host copy or wait inside a
// capture, and, for kernels from CapturableMirrorKernels, work that is recorded during
// the capture and run by each replay on the addresses it was recorded with
// (kernel_tape.h). It counts captures and replays.
#pragma once

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "ops/kernel_registry.h"
#include "runtime/exec/caching_allocator.h"
#include "runtime/exec/device.h"
#include "tests/runtime/kernel_tape.h"

namespace onnx_amp::testing {

class HostBackedDevice final : public Device {
 public:
  // `kernels`: the CPU kernels the device takes, as kCuda kernels (see MirrorKernels).
  explicit HostBackedDevice(KernelRegistry kernels)
      : kernels_(std::move(kernels)), allocator_(CachingAllocator::Create(std::make_unique<Memory>())) {}

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string Describe() const override { return "host-backed test device"; }
  const KernelRegistry& kernels() const override { return kernels_; }
  Expected<std::shared_ptr<Buffer>> Allocate(size_t bytes) override { return allocator_->Allocate(bytes); }
  Status CopyFromHost(void* device_destination, const void* host, size_t bytes) override {
    if (capturing_) return Misuse("a copy from the host");
    ++copies_to_device;
    if (bytes > 0) std::memcpy(device_destination, host, bytes);
    return Status::Ok();
  }
  Status CopyToHost(void* host, const void* device_source, size_t bytes) override {
    if (capturing_) return Misuse("a copy to the host");
    ++copies_to_host;
    if (bytes > 0) std::memcpy(host, device_source, bytes);
    return Status::Ok();
  }
  Status CopyOnDevice(void* destination, const void* source, size_t bytes) override {
    if (capturing_) {
      tape_->RecordCopy(destination, source, bytes);
      return Status::Ok();
    }
    if (bytes > 0) std::memmove(destination, source, bytes);
    return Status::Ok();
  }
  Status Synchronize() override { return capturing_ ? Misuse("a wait") : Status::Ok(); }

  bool SupportsCapture() const override { return capture; }
  Status BeginCapture() override {
    if (!capture) return Unsupported("no capture");
    ONNX_AMP_RETURN_IF_ERROR(allocator_->BeginCapture());
    capturing_ = true;
    tape_ = std::make_shared<KernelTape>();
    capture_error_.clear();
    ++captures;
    return Status::Ok();
  }
  Expected<std::unique_ptr<DeviceGraph>> EndCapture() override {
    capturing_ = false;
    ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<CapturePool> memory, allocator_->EndCapture());
    if (!capture_error_.empty()) return InternalError(capture_error_);
    if (fail_capture) return InternalError("capture refused by the test");
    return std::unique_ptr<DeviceGraph>(new Graph(std::move(memory), std::move(tape_), *this));
  }
  bool capturing() const { return capturing_; }
  KernelTape& tape() { return *tape_; }

  CachingAllocatorStats memory_stats() const { return allocator_->stats(); }

  int copies_to_device = 0;
  int copies_to_host = 0;
  bool capture = false;       // SupportsCapture()
  bool fail_capture = false;  // EndCapture fails
  int captures = 0;
  int replays = 0;

 private:
  class Memory final : public RawDeviceMemory {
   public:
    DeviceKind kind() const override { return DeviceKind::kCuda; }
    Expected<void*> Allocate(size_t bytes) override {
      void* data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (data == nullptr) return Unsupported("out of host memory");
      return data;
    }
    void Free(void* data) override { std::free(data); }
  };

  class Graph final : public DeviceGraph {
   public:
    Graph(std::unique_ptr<CapturePool> memory, std::shared_ptr<KernelTape> tape, HostBackedDevice& device)
        : memory_(std::move(memory)), tape_(std::move(tape)), device_(device) {}
    Status Replay() override {
      ++device_.replays;
      return tape_->Replay(&device_);
    }

   private:
    std::unique_ptr<CapturePool> memory_;
    std::shared_ptr<KernelTape> tape_;
    HostBackedDevice& device_;
  };

  // As on CUDA, a forbidden call inside a capture fails, and so does the capture.
  Status Misuse(const std::string& what) {
    capture_error_ = what + " inside a capture";
    return InternalError(capture_error_);
  }

  KernelRegistry kernels_;
  std::shared_ptr<CachingAllocator> allocator_;
  bool capturing_ = false;
  std::shared_ptr<KernelTape> tape_;
  std::string capture_error_;
};

// The CPU kernels of `cpu` that `take` accepts, registered for kCuda (with `adjust`
// applied to each definition).
inline KernelRegistry MirrorKernels(const KernelRegistry& cpu, const std::function<bool(const KernelDef&)>& take,
                                    const std::function<void(KernelDef&)>& adjust = {}) {
  KernelRegistry mirror;
  for (const KernelDef* def : cpu.All()) {
    if (!take(*def)) continue;
    KernelDef copy = *def;
    copy.device = DeviceKind::kCuda;
    if (adjust) adjust(copy);
    mirror.Register(copy);
  }
  return mirror;
}

// A mirrored kernel that a capture on its HostBackedDevice records (the CPU kernel of
// the node's op does the work).
inline Status TapedCompute(KernelContext& context) {
  const onnx::NodeProto& node = context.node();
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  const KernelDef* cpu = CpuKernelRegistry().Find(domain, node.op_type(), DeviceKind::kCpu);
  if (cpu == nullptr) return InternalError("no CPU kernel behind the mirrored " + node.op_type());
  auto* device = dynamic_cast<HostBackedDevice*>(context.device_context());
  if (device == nullptr || !device->capturing()) return cpu->compute(context);
  return device->tape().Record(cpu->compute, context);
}

// MirrorKernels of the CPU kernels, recorded when their device captures.
inline KernelRegistry CapturableMirrorKernels(const std::function<bool(const KernelDef&)>& take,
                                              const std::function<void(KernelDef&)>& adjust = {}) {
  return MirrorKernels(CpuKernelRegistry(), take, [adjust](KernelDef& def) {
    def.compute = &TapedCompute;
    if (adjust) adjust(def);
  });
}

}  // namespace onnx_amp::testing
