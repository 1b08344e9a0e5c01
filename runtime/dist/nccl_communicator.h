// NCCL over the ranks of a bootstrap communicator (MPI), one GPU per rank, for device memory:
// the GPU counterpart of MpiCommunicator behind the same Communicator interface, so the
// trainer's hook is the same on both. Built in CUDA builds only (ONNX_AMP_WITH_NCCL).
//
// Collectives run on the communicator's own stream and AllReduce/Broadcast wait for them:
// the wait polls the stream and NCCL's asynchronous error, and past the timeout aborts the
// NCCL communicator and returns an error naming the collective (no hang when a peer dies).
// StartAllReduce only enqueues: a step's buckets go onto the stream back to back and one
// wait completes them all (the stream runs them in order). The memory given to a
// collective must hold its final values before it is started (the caller synchronizes the
// stream that wrote it): this stream does not wait for the device's own.
#pragma once

#include <chrono>
#include <memory>

#include "runtime/core/status.h"
#include "runtime/dist/communicator.h"

namespace onnx_amp {

class NcclCommunicator final : public Communicator {
 public:
  // Creates the NCCL communicator of this rank on GPU `device`. With `bootstrap` null, or of
  // size 1, it is a single rank (one GPU runs as N = 1); otherwise rank 0 makes NCCL's
  // unique id and `bootstrap` broadcasts it. Errors name the failing CUDA or NCCL call.
  static Expected<std::unique_ptr<NcclCommunicator>> Create(Communicator* bootstrap, int device,
                                                            std::chrono::milliseconds timeout);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "nccl"; }
  int device() const { return device_; }

  // `data` is memory on device(). float32, float64 and int64.
  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) override;
  Expected<std::unique_ptr<PendingCollective>> StartAllReduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                                              std::string_view what) override;
  Status Broadcast(void* data, int64_t bytes, int root, std::string_view what) override;

 private:
  struct Handles;
  class Pending;
  NcclCommunicator(int rank, int size, int device, std::chrono::milliseconds timeout, std::unique_ptr<Handles> handles);
  Status Enqueue(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what);
  // Waits for every collective enqueued on the stream so far.
  Status Wait(std::string_view what);

  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<Handles> handles_;
};

// GPUs this process can see (0 without a driver or a device).
int VisibleCudaDevices();

}  // namespace onnx_amp
