// The collectives data-parallel training needs, behind one small interface so that the
// trainer's hook (gradient_sync.h) is the same for Open MPI on CPUs (mpi_communicator.h)
// and NCCL on GPUs (nccl_communicator.h). Every rank calls the same collectives in the same
// order; a collective that does not complete within the communicator's timeout ends the
// process with an error naming it (collective_watchdog.h), never a hang.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx_amp {

enum class ReduceOp { kSum, kMax };

class Communicator {
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
  // Copies `bytes` bytes at `data` from `root` to every rank (host memory for MPI).
  virtual Status Broadcast(void* data, int64_t bytes, int root, std::string_view what) = 0;
};

}  // namespace onnx_amp
