// The collectives data-parallel training needs, behind one small interface so that the
// trainer's hook (gradient_sync.h) is the same for Open MPI on CPUs (mpi_communicator.h)
// and NCCL on GPUs (nccl_communicator.h). Every rank calls the same collectives in the same
// order; a collective that does not complete within the communicator's timeout ends the
// process with an error naming it (collective_watchdog.h), never a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx_amp {

enum class ReduceOp { kSum, kMax };

// A collective started and not yet waited for. Its memory belongs to the collective until
// Wait() returns. Destroying it waits for it (a rank must never free memory MPI may still
// write).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Lets the collective advance without blocking (MPI moves a non-blocking collective on
  // only inside MPI calls) and says whether it has completed.
  virtual Expected<bool> Test() = 0;
  // Completes it, bounded by the communicator's timeout.
  virtual Status Wait() = 0;
};

class Communicator {
 private:
  // What the default StartAllReduce returns: it ran to completion when it was started.
  class CompletedCollective final : public PendingCollective {
   public:
    Expected<bool> Test() override { return true; }
    Status Wait() override { return Status::Ok(); }
  };

 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi" or "nccl", for messages.
  virtual std::string_view backend() const = 0;

  // Reduces `count` elements at `data` over every rank, in place. The memory is where the
  // backend reduces: host memory for MPI, the communicator's GPU for NCCL. `what` names the
  // collective in errors ("gradients of step 12"). Supported dtypes: float32, float64, int64.
  virtual Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) = 0;
  // Starts the same all-reduce and returns before it completes, so that work can go on
  // beside it. Every rank starts its collectives in the same order. This default runs it
  // to completion at once; MpiCommunicator starts a non-blocking one. (Inline, as the whole
  // interface: the CUDA backend library implements it without linking this folder.)
  virtual Expected<std::unique_ptr<PendingCollective>> StartAllReduce(void* data, int64_t count, DType dtype,
                                                                      ReduceOp op, std::string_view what) {
    ONNX_AMP_RETURN_IF_ERROR(AllReduce(data, count, dtype, op, what));
    return std::unique_ptr<PendingCollective>(new CompletedCollective());
  }
  // Copies `bytes` bytes at `data` from `root` to every rank (host memory for MPI).
  virtual Status Broadcast(void* data, int64_t bytes, int root, std::string_view what) = 0;
};

}  // namespace onnx_amp
