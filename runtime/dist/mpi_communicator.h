// Open MPI (or any MPI-3 library) over MPI_COMM_WORLD, for host memory. MPI is initialised
// only when the process was started by an MPI launcher (LaunchedByMpiLauncher()), so a
// plain `onnx-amp train` never initialises MPI. Every collective is bounded by a
// CollectiveWatchdog; errors from MPI come back as a Status (MPI_ERRORS_RETURN).
#pragma once

#include <chrono>
#include <memory>

#include "runtime/core/status.h"
#include "runtime/dist/collective_watchdog.h"
#include "runtime/dist/communicator.h"

namespace onnx_amp {

// True when an MPI launcher started this process: mpirun/mpiexec of Open MPI
// (OMPI_COMM_WORLD_SIZE), a PMIx launcher such as srun or prterun (PMIX_RANK), or a PMI
// one such as MPICH's hydra (PMI_RANK).
bool LaunchedByMpiLauncher();

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI (once per process). `timeout` bounds every collective (<= 0: none).
  static Expected<std::unique_ptr<MpiCommunicator>> Create(std::chrono::milliseconds timeout);
  ~MpiCommunicator() override;  // finalises MPI

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }
  // Ranks on this machine (for the default thread count).
  int local_size() const { return local_size_; }

  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) override;
  // MPI_Iallreduce; the watchdog bounds the wait for it, not the time it runs beside other
  // work.
  Expected<std::unique_ptr<PendingCollective>> StartAllReduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                                              std::string_view what) override;
  Status Broadcast(void* data, int64_t bytes, int root, std::string_view what) override;

  // Ends every rank of the job with `exit_code` (after an error on this one): a rank that
  // returned normally would wait for the others in MPI_Finalize while they wait for it in
  // their next collective.
  [[noreturn]] void Abort(int exit_code);

 private:
  MpiCommunicator(int rank, int size, int local_size, std::chrono::milliseconds timeout);

  const int rank_;
  const int size_;
  const int local_size_;
  CollectiveWatchdog watchdog_;
};

}  // namespace onnx_amp
