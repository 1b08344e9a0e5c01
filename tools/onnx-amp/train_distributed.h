// Data-parallel `onnx-amp train` under an MPI launcher (`mpirun -np N onnx-amp train ...`).
// When the process was not started by one, nothing here runs and MPI is never initialised:
// a plain `onnx-amp train` is unchanged. Under a launcher each rank trains a replica on its
// shard of every step (runtime/train/replica_sync.h, runtime/dist/gradient_sync.h); rank 0
// alone prints progress and writes metrics, checkpoints, the training graphs and the export.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

#include "runtime/core/status.h"
#include "runtime/dist/gradient_sync.h"
#include "runtime/dist/mpi_communicator.h"

namespace onnx_amp {

struct DistributedFlags {
  double timeout_seconds = 300.0;  // bound on every collective; 0: wait forever
  double bucket_mib = 8.0;         // gradient all-reduce bucket size
  bool no_overlap = false;         // reduce buckets after the backward pass, not beside it
};

void AddDistributedFlags(CLI::App& command, DistributedFlags& flags);

class DistributedTraining {
 public:
  // Null without an MPI launcher. Errors: a flag out of range, MPI failing to start.
  static Expected<std::unique_ptr<DistributedTraining>> StartIfLaunched(const DistributedFlags& flags);

  int rank() const { return communicator_->rank(); }
  int ranks() const { return communicator_->size(); }
  bool writes_files() const { return rank() == 0; }
  // The trainer's hook; null for a single rank, which then runs exactly as without mpirun.
  ReplicaSync* sync() { return ranks() > 1 ? sync_.get() : nullptr; }
  // Worker threads per rank when --threads is 0: the cores shared by the ranks on this machine.
  int DefaultThreads() const;
  // One line for rank 0's log: the ranks, the global batch and what a step all-reduces.
  std::string Describe(int64_t batch_size, int64_t accumulation_steps) const;
  // One line for rank 0's log after the run: what each step all-reduced.
  std::string DescribeVolume() const;
  // Prints `status` naming this rank, then ends every rank of the job (an error on one rank
  // would otherwise leave the others waiting in their next collective).
  [[noreturn]] void Abort(const Status& status);

 private:
  DistributedTraining(std::unique_ptr<MpiCommunicator> communicator, int64_t bucket_bytes, bool overlap);

  std::unique_ptr<MpiCommunicator> communicator_;
  std::unique_ptr<GradientSync> sync_;
};

}  // namespace onnx_amp
