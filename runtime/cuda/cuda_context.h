// The CUDA execution device (runtime/exec/device.h): one GPU, one compute stream that
// every kernel and copy is queued on, a copy stream for training batches, the cuBLASLt
// and cuDNN handles, a caching pool of device memory (no cudaMalloc per step), pinned
// host memory, the cuBLASLt/cuDNN workspace, and per-device caches that kernels keep
// (cuBLASLt algorithms, cuDNN execution plans).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>

#include "runtime/exec/caching_allocator.h"
#include "runtime/exec/device.h"

namespace onnx_amp {

struct CudaDeviceOptions {
  int ordinal = 0;
  // float32 GEMMs and convolutions on TF32 Tensor Cores (10-bit mantissa products);
  // off by default, so float32 means float32.
  bool allow_tf32 = false;
};

// Base of the caches kernels keep per device.
class CudaDeviceCache {
 public:
  virtual ~CudaDeviceCache() = default;
};

class CudaDevice final : public Device {
 public:
  // Errors: Unsupported naming the reason when the device cannot be used (no driver, no
  // visible GPU, an ordinal past the last one).
  static Expected<std::unique_ptr<CudaDevice>> Create(const CudaDeviceOptions& options, const KernelRegistry& kernels);
  ~CudaDevice() override;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string Describe() const override { return description_; }
  const KernelRegistry& kernels() const override { return kernels_; }
  Expected<std::shared_ptr<Buffer>> Allocate(size_t bytes) override;
  Status CopyFromHost(void* device_destination, const void* host, size_t bytes) override;
  Status CopyToHost(void* host, const void* device_source, size_t bytes) override;
  Status CopyOnDevice(void* destination, const void* source, size_t bytes) override;
  Status Synchronize() override;

  cudaStream_t stream() const { return stream_; }
  int multiprocessors() const { return multiprocessors_; }
  bool allow_tf32() const { return options_.allow_tf32; }
  cublasLtHandle_t cublas_lt() const { return cublas_lt_; }
  // Created on first use: cuDNN loads its sub-libraries then.
  Expected<cudnnHandle_t> cudnn();
  // Scratch for one library call at a time on the stream; grows, never shrinks.
  Expected<void*> Workspace(size_t bytes);
  CachingAllocatorStats memory_stats() const { return allocator_->stats(); }

  // Page-locked host memory (a host buffer: device() is kCpu) copied on a second
  // stream, which the compute stream waits for at WaitForCopies().
  Expected<std::shared_ptr<Buffer>> AllocatePinned(size_t bytes) override;
  Status CopyFromPinnedAsync(void* device_destination, const void* host, size_t bytes) override;
  Status WaitForCopies() override;
  Status SynchronizeCopies() override;

  // CUDA graphs: stream capture of the compute stream (thread-local mode), the caching
  // pool's capture mode, cudaGraphInstantiate.
  bool SupportsCapture() const override { return true; }
  Status BeginCapture() override;
  Expected<std::unique_ptr<DeviceGraph>> EndCapture() override;

  // The cache of type T this device keeps (created on first use).
  template <typename T>
  T& Cache() {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    std::unique_ptr<CudaDeviceCache>& slot = caches_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }

 private:
  CudaDevice(const CudaDeviceOptions& options, const KernelRegistry& kernels) : options_(options), kernels_(kernels) {}

  CudaDeviceOptions options_;
  const KernelRegistry& kernels_;
  std::string description_;
  int multiprocessors_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t copies_done_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::shared_ptr<CachingAllocator> allocator_;
  std::shared_ptr<CachingAllocator> pinned_;
  std::shared_ptr<Buffer> workspace_;
  bool capturing_ = false;
  std::mutex cache_mutex_;
  std::unordered_map<std::type_index, std::unique_ptr<CudaDeviceCache>> caches_;
};

}  // namespace onnx_amp
