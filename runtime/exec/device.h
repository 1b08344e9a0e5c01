// An execution device other than the host CPU (a CUDA GPU): its memory, copies to and
// from the host, the ordering of its work, and its kernels. The executor places each
// node on the device when the device has a kernel for it and on the CPU otherwise, and
// inserts explicit copy steps where a value crosses (execution_plan.h). Kernels reach
// the device through KernelContext::device(); host code reads device tensors only
// through CopyToHost.
//
// Work is queued in order (a CUDA stream): a copy or kernel sees the results of every
// earlier one, so device memory released by one step may be reused by the next without
// a wait. Only CopyToHost and Synchronize wait for the device.
//
// Capture (CUDA graphs): work queued between BeginCapture and EndCapture is recorded,
// not run, and comes back as a DeviceGraph that queues all of it again with one call,
// on the same device addresses. What the captured work reads per replay must therefore
// sit at fixed addresses, written before each Replay(); memory allocated during the
// capture comes from a private pool the graph keeps (caching_allocator.h). Inside a
// capture nothing may wait for the device (CopyToHost, Synchronize) or copy from
// ordinary host memory: such a call fails and the capture with it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

class KernelRegistry;

// A captured sequence of device work. Dropping it gives its private memory back.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  // Queues the captured work again (after the work before it, like a kernel).
  virtual Status Replay() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  // "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)".
  virtual std::string Describe() const = 0;
  // The device's kernels; nodes they do not cover run on the CPU.
  virtual const KernelRegistry& kernels() const = 0;

  // Device memory of at least `bytes`, from the device's caching pool. Error: out of memory.
  virtual Expected<std::shared_ptr<Buffer>> Allocate(size_t bytes) = 0;
  // Queued after the work before it; returns once `host` may be reused.
  virtual Status CopyFromHost(void* device_destination, const void* host, size_t bytes) = 0;
  // Waits for the work before it; the bytes are on the host when it returns.
  virtual Status CopyToHost(void* host, const void* device_source, size_t bytes) = 0;
  virtual Status CopyOnDevice(void* destination, const void* source, size_t bytes) = 0;
  // Waits for every queued copy and kernel; reports an error a kernel left behind.
  virtual Status Synchronize() = 0;

  // Batch staging, so that a training batch's copy overlaps the step before it: host
  // memory the device reads without staging (page-locked), copies from it queued beside
  // the kernels, and the two waits that order them. The defaults copy in order.
  virtual Expected<std::shared_ptr<Buffer>> AllocatePinned(size_t bytes) { return Buffer::AllocateCpu(bytes); }
  // Queued on the copy queue; `host` must stay unchanged until SynchronizeCopies().
  virtual Status CopyFromPinnedAsync(void* device_destination, const void* host, size_t bytes) {
    return CopyFromHost(device_destination, host, bytes);
  }
  // Work queued after this waits for the copies queued before it.
  virtual Status WaitForCopies() { return Status::Ok(); }
  // The host waits for the copies queued so far.
  virtual Status SynchronizeCopies() { return Status::Ok(); }

  // Whether BeginCapture can work on this device (the defaults: it cannot).
  virtual bool SupportsCapture() const { return false; }
  // Starts recording the work this thread queues; device memory allocated from here on
  // comes from a private pool. Errors: Unsupported without capture, a capture already open.
  virtual Status BeginCapture() { return Unsupported("this device cannot capture its work"); }
  // Stops recording; the recorded work as a graph. An error (a wait or a host copy inside
  // the capture, a graph the driver refuses) ends the capture all the same, discarding it.
  virtual Expected<std::unique_ptr<DeviceGraph>> EndCapture() {
    return Unsupported("this device cannot capture its work");
  }
};

// A device tensor with `host`'s contents (a host tensor is copied; a tensor already on
// `device` is returned as is).
Expected<Tensor> CopyToDevice(const Tensor& host, Device& device);
// A host tensor with `tensor`'s contents: the tensor itself when it is on the host; a
// device tensor needs its `device` (Internal error when it is nullptr).
Expected<Tensor> CopyToHost(const Tensor& tensor, Device* device);

}  // namespace onnx_amp
