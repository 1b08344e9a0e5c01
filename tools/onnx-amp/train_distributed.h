// Data-parallel `onnx-amp train` under an MPI launcher (`mpirun -np N onnx-amp train ...`).
// When the process was not started by one, nothing here runs and MPI is never initialised:
// a plain `onnx-amp train` is unchanged. Under a launcher each rank trains a replica on its
// shard of every step (runtime/train/replica_sync.h, runtime/dist/gradient_sync.h); rank 0
// alone prints progress and writes metrics, checkpoints, the training graphs and the export.
// With --device cuda each rank trains on its own GPU (runtime/dist/rank_gpu.h) and the
// gradients are summed there through NCCL (runtime/dist/device_gradient_sync.h), NCCL being
// bootstrapped over the MPI communicator, which keeps the host-side collectives.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>

#include "runtime/core/status.h"
#include "runtime/dist/device_gradient_sync.h"
#include "runtime/dist/gradient_sync.h"
#include "runtime/dist/mpi_communicator.h"
#include "runtime/exec/device.h"
#include "tools/onnx-amp/device_flag.h"

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
  // The device this rank trains on, owned here (it must outlive the sync's buckets): null
  // for --device cpu; for cuda, this rank's GPU (its local rank modulo the visible GPUs;
  // every rank prints which) and, with more than one rank, NCCL over the ranks, which the
  // trainer's hook then sums the gradients through. Call once, before sync().
  Expected<Device*> OpenDevice(const DeviceFlags& flags);
  // The trainer's hook; null for a single rank, which then runs exactly as without mpirun.
  ReplicaSync* sync();
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
  DistributedTraining(std::unique_ptr<MpiCommunicator> communicator, std::chrono::milliseconds timeout,
                      int64_t bucket_bytes, bool overlap);
  // OpenDevice for --device cuda (CUDA builds).
  Status OpenRankGpu(const DeviceFlags& flags);
  const GradientSyncVolume& volume() const;

  // Destroyed bottom up: the syncs' buckets go back to the device before it closes, NCCL
  // ends before MPI.
  std::unique_ptr<MpiCommunicator> communicator_;
  const std::chrono::milliseconds timeout_;
  const int64_t bucket_bytes_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Communicator> nccl_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<DeviceGradientSync> device_sync_;  // with NCCL
};

}  // namespace onnx_amp
