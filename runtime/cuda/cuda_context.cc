#include "runtime/cuda/cuda_context.h"

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"

namespace onnx_amp {
namespace {

class CudaMemory final : public RawDeviceMemory {
 public:
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  Expected<void*> Allocate(size_t bytes) override {
    void* data = nullptr;
    // cudaMalloc is no stream work: during a capture (the caching pool's private pool
    // then takes the block for the graph) it must not invalidate the capture.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    const cudaError_t error = cudaMalloc(&data, bytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (error != cudaSuccess) {
      cudaGetLastError();  // an out-of-memory error is not sticky; clear it
      return Unsupported("CUDA device memory: " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(error));
    }
    return data;
  }
  void Free(void* data) override { cudaFree(data); }
};

// Page-locked host memory: host buffers (kCpu) the DMA engine reads directly.
class PinnedMemory final : public RawDeviceMemory {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  Expected<void*> Allocate(size_t bytes) override {
    void* data = nullptr;
    const cudaError_t error = cudaHostAlloc(&data, bytes, cudaHostAllocDefault);
    if (error != cudaSuccess) {
      cudaGetLastError();
      return Unsupported("pinned host memory: " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(error));
    }
    return data;
  }
  void Free(void* data) override { cudaFreeHost(data); }
};

// A captured CUDA graph, instantiated, with the private memory its kernels use.
class CudaGraph final : public DeviceGraph {
 public:
  CudaGraph(cudaGraphExec_t graph, cudaStream_t stream, std::unique_ptr<CapturePool> memory)
      : graph_(graph), stream_(stream), memory_(std::move(memory)) {}
  ~CudaGraph() override { cudaGraphExecDestroy(graph_); }
  Status Replay() override { return CudaStatus(cudaGraphLaunch(graph_, stream_), "CUDA graph launch"); }

 private:
  cudaGraphExec_t graph_;
  cudaStream_t stream_;
  std::unique_ptr<CapturePool> memory_;  // released after the graph is destroyed
};

Status CublasLtStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string("cuBLASLt ") + what + ": status " + std::to_string(static_cast<int>(status)));
}

}  // namespace

Expected<std::unique_ptr<CudaDevice>> CudaDevice::Create(const CudaDeviceOptions& options,
                                                          const KernelRegistry& kernels) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return Unsupported(std::string("no CUDA device is usable: ") + cudaGetErrorString(error));
  }
  if (count == 0) return Unsupported("no CUDA device is visible");
  if (options.ordinal < 0 || options.ordinal >= count) {
    return Unsupported("CUDA device " + std::to_string(options.ordinal) + " does not exist (" + std::to_string(count) +
                       " visible)");
  }
  std::unique_ptr<CudaDevice> device(new CudaDevice(options, kernels));
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.ordinal), "cudaSetDevice");
  ONNX_AMP_ASSIGN_OR_RETURN(device->description_, CudaDeviceDescription(options.ordinal));
  ONNX_AMP_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&device->multiprocessors_, cudaDevAttrMultiProcessorCount, options.ordinal),
      "multiprocessor count");
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&device->stream_, cudaStreamNonBlocking), "stream");
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&device->copy_stream_, cudaStreamNonBlocking),
                                "copy stream");
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&device->copies_done_, cudaEventDisableTiming), "event");
  ONNX_AMP_RETURN_IF_ERROR(CublasLtStatus(cublasLtCreate(&device->cublas_lt_), "create"));
  device->allocator_ = CachingAllocator::Create(std::make_unique<CudaMemory>());
  device->pinned_ = CachingAllocator::Create(std::make_unique<PinnedMemory>());
  return device;
}

CudaDevice::~CudaDevice() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (copy_stream_ != nullptr) cudaStreamSynchronize(copy_stream_);
  workspace_.reset();
  caches_.clear();
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_lt_ != nullptr) cublasLtDestroy(cublas_lt_);
  if (copies_done_ != nullptr) cudaEventDestroy(copies_done_);
  if (copy_stream_ != nullptr) cudaStreamDestroy(copy_stream_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Expected<std::shared_ptr<Buffer>> CudaDevice::Allocate(size_t bytes) { return allocator_->Allocate(bytes); }

Status CudaDevice::CopyFromHost(void* device_destination, const void* host, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  // A captured copy would read `host` again on every replay, long after the caller
  // reused it.
  if (capturing_) return InternalError("a copy from host memory inside a CUDA graph capture");
  return CudaStatus(cudaMemcpyAsync(device_destination, host, bytes, cudaMemcpyHostToDevice, stream_), "copy to device");
}

Status CudaDevice::CopyToHost(void* host, const void* device_source, size_t bytes) {
  if (capturing_) return InternalError("a copy to the host (a wait for the device) inside a CUDA graph capture");
  if (bytes > 0) {
    ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, device_source, bytes, cudaMemcpyDeviceToHost, stream_),
                                  "copy to host");
  }
  return CudaStatus(cudaStreamSynchronize(stream_), "copy to host");
}

Status CudaDevice::CopyOnDevice(void* destination, const void* source, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return CudaStatus(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream_), "device copy");
}

Status CudaDevice::Synchronize() {
  if (capturing_) return InternalError("a wait for the device inside a CUDA graph capture");
  return CudaStatus(cudaStreamSynchronize(stream_), "synchronize");
}

Expected<cudnnHandle_t> CudaDevice::cudnn() {
  if (cudnn_ != nullptr) return cudnn_;
  const cudnnStatus_t status = cudnnCreate(&cudnn_);
  if (status != CUDNN_STATUS_SUCCESS) {
    cudnn_ = nullptr;
    return Unsupported(std::string("cuDNN: ") + cudnnGetErrorString(status));
  }
  const cudnnStatus_t set = cudnnSetStream(cudnn_, stream_);
  if (set != CUDNN_STATUS_SUCCESS) return InternalError(std::string("cuDNN set stream: ") + cudnnGetErrorString(set));
  return cudnn_;
}

Expected<void*> CudaDevice::Workspace(size_t bytes) {
  if (!workspace_ || workspace_->bytes() < bytes) {
    workspace_.reset();
    ONNX_AMP_ASSIGN_OR_RETURN(workspace_, allocator_->Allocate(bytes));
  }
  return workspace_->data();
}

Expected<std::shared_ptr<Buffer>> CudaDevice::AllocatePinned(size_t bytes) { return pinned_->Allocate(bytes); }

Status CudaDevice::CopyFromPinnedAsync(void* device_destination, const void* host, size_t bytes) {
  if (bytes > 0) {
    ONNX_AMP_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(device_destination, host, bytes, cudaMemcpyHostToDevice, copy_stream_), "batch copy");
  }
  return CudaStatus(cudaEventRecord(copies_done_, copy_stream_), "batch copy event");
}

Status CudaDevice::WaitForCopies() {
  return CudaStatus(cudaStreamWaitEvent(stream_, copies_done_, 0), "wait for batch copies");
}

Status CudaDevice::SynchronizeCopies() { return CudaStatus(cudaEventSynchronize(copies_done_), "batch copies"); }

Status CudaDevice::BeginCapture() {
  if (capturing_) return InternalError("a CUDA graph capture is already open");
  ONNX_AMP_RETURN_IF_ERROR(allocator_->BeginCapture());
  const cudaError_t error = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  if (error != cudaSuccess) {
    cudaGetLastError();
    (void)allocator_->EndCapture();
    return CudaStatus(error, "CUDA graph capture");
  }
  capturing_ = true;
  return Status::Ok();
}

Expected<std::unique_ptr<DeviceGraph>> CudaDevice::EndCapture() {
  if (!capturing_) return InternalError("no CUDA graph capture is open");
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  // The pool's handle goes with the graph; on an error it dies here and its blocks
  // return to the shared list (nothing was run on them).
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<CapturePool> memory, allocator_->EndCapture());
  if (ended != cudaSuccess) {
    cudaGetLastError();  // an invalidated capture is not a sticky error
    if (graph != nullptr) cudaGraphDestroy(graph);
    return CudaStatus(ended, "CUDA graph capture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    return CudaStatus(instantiated, "CUDA graph instantiate");
  }
  return std::unique_ptr<DeviceGraph>(new CudaGraph(exec, stream_, std::move(memory)));
}

}  // namespace onnx_amp
