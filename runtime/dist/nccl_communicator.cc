#include "runtime/dist/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <string>
#include <thread>

namespace onnx_amp {

struct NcclCommunicator::Handles {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

namespace {

Status CudaStatus(cudaError_t code, std::string_view call) {
  if (code == cudaSuccess) return Status::Ok();
  return IoError(std::string(call) + ": " + cudaGetErrorString(code));
}

Status NcclStatus(ncclResult_t code, std::string_view call) {
  if (code == ncclSuccess || code == ncclInProgress) return Status::Ok();
  return IoError(std::string(call) + ": " + ncclGetErrorString(code));
}

Expected<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt64:
      return ncclInt64;
    default:
      return InternalError("NCCL collectives take float32, float64 or int64, not " + std::string(DTypeName(dtype)));
  }
}

}  // namespace

int VisibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

NcclCommunicator::NcclCommunicator(int rank, int size, int device, std::chrono::milliseconds timeout,
                                   std::unique_ptr<Handles> handles)
    : rank_(rank), size_(size), device_(device), timeout_(timeout), handles_(std::move(handles)) {}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator* bootstrap, int device,
                                                                     std::chrono::milliseconds timeout) {
  const int rank = bootstrap != nullptr ? bootstrap->rank() : 0;
  const int size = bootstrap != nullptr ? bootstrap->size() : 1;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) ONNX_AMP_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  if (size > 1) {
    ONNX_AMP_RETURN_IF_ERROR(bootstrap->Broadcast(&id, sizeof(id), 0, "the NCCL unique id"));
  }
  ONNX_AMP_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")"));
  auto handles = std::make_unique<Handles>();
  ONNX_AMP_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&handles->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  ONNX_AMP_RETURN_IF_ERROR(NcclStatus(ncclCommInitRank(&handles->comm, size, id, rank), "ncclCommInitRank"));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(rank, size, device, timeout, std::move(handles)));
}

NcclCommunicator::~NcclCommunicator() {
  if (handles_->comm != nullptr) ncclCommDestroy(handles_->comm);
  if (handles_->stream != nullptr) cudaStreamDestroy(handles_->stream);
}

// An all-reduce enqueued on the communicator's stream; waiting for it waits for the stream.
class NcclCommunicator::Pending final : public PendingCollective {
 public:
  Pending(NcclCommunicator& communicator, std::string_view what) : communicator_(communicator), what_(what) {}
  ~Pending() override {
    if (!done_) (void)Wait();
  }
  Expected<bool> Test() override {
    if (done_) return true;
    if (cudaStreamQuery(communicator_.handles_->stream) == cudaErrorNotReady) return false;
    ONNX_AMP_RETURN_IF_ERROR(Wait());  // done, or failed: Wait says which
    return true;
  }
  Status Wait() override {
    if (done_) return Status::Ok();
    done_ = true;  // an error is reported once
    return communicator_.Wait(what_);
  }

 private:
  NcclCommunicator& communicator_;
  const std::string what_;
  bool done_ = false;
};

Status NcclCommunicator::Wait(std::string_view what) {
  if (handles_->comm == nullptr) return IoError(std::string(what) + ": the NCCL communicator was aborted");
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    const cudaError_t state = cudaStreamQuery(handles_->stream);
    if (state == cudaSuccess) return Status::Ok();
    if (state != cudaErrorNotReady) return CudaStatus(state, std::string(what));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(handles_->comm, &async);
    // A failed or timed-out collective aborts the communicator: NCCL's way to free the
    // stream from a collective whose peers are gone.
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(handles_->comm);
      handles_->comm = nullptr;
      return NcclStatus(async, std::string(what));
    }
    if (timeout_.count() > 0 && std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(handles_->comm);
      handles_->comm = nullptr;
      return IoError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + std::string(what) +
                     " did not complete within " + std::to_string(timeout_.count()) +
                     " ms: another rank has died or stopped responding");
    }
    std::this_thread::yield();
  }
}

Status NcclCommunicator::Enqueue(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) {
  if (handles_->comm == nullptr) return IoError(std::string(what) + ": the NCCL communicator was aborted");
  ONNX_AMP_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(dtype));
  return NcclStatus(ncclAllReduce(data, data, static_cast<size_t>(count), type, op == ReduceOp::kSum ? ncclSum : ncclMax,
                                  handles_->comm, handles_->stream),
                    "ncclAllReduce (" + std::string(what) + ")");
}

Status NcclCommunicator::AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) {
  ONNX_AMP_RETURN_IF_ERROR(Enqueue(data, count, dtype, op, what));
  return Wait(what);
}

Expected<std::unique_ptr<PendingCollective>> NcclCommunicator::StartAllReduce(void* data, int64_t count, DType dtype,
                                                                              ReduceOp op, std::string_view what) {
  ONNX_AMP_RETURN_IF_ERROR(Enqueue(data, count, dtype, op, what));
  return std::unique_ptr<PendingCollective>(new Pending(*this, what));
}

Status NcclCommunicator::Broadcast(void* data, int64_t bytes, int root, std::string_view what) {
  if (handles_->comm == nullptr) return IoError(std::string(what) + ": the NCCL communicator was aborted");
  ONNX_AMP_RETURN_IF_ERROR(NcclStatus(
      ncclBroadcast(data, data, static_cast<size_t>(bytes), ncclUint8, root, handles_->comm, handles_->stream),
      "ncclBroadcast (" + std::string(what) + ")"));
  return Wait(what);
}

}  // namespace onnx_amp
