// Which GPU a data-parallel rank trains on, and its NCCL communicator from the CUDA
// backend's table: the host-side decisions of `mpirun -np N onnx-amp train --device cuda`,
// kept apart from CUDA so that they are tested on machines without a GPU.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "runtime/core/status.h"
#include "runtime/dist/communicator.h"
#include "runtime/exec/cuda_backend.h"

namespace onnx_amp {

// This process's rank among the ranks on its machine, as the launcher says:
// OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID (MPICH's hydra) or SLURM_LOCALID
// (srun). nullopt when none is set to a number.
std::optional<int> LauncherLocalRank();

struct RankGpu {
  int ordinal = 0;
  int local_rank = 0;
  bool local_rank_known = true;  // false: the launcher named none, the world rank stood in
  int visible = 0;
  // "GPU 1 of 2 (local rank 1)", for the rank's log line.
  std::string Describe() const;
};

// The GPU of a rank: its local rank modulo the visible GPUs, so that the ranks on a machine
// spread over its GPUs and wrap around when there are more ranks than GPUs (they then
// share). Without a local rank, `world_rank` stands in (right on a single machine).
// Errors: no visible GPU.
Expected<RankGpu> ChooseRankGpu(std::optional<int> local_rank, int world_rank, int visible_gpus);

// The NCCL communicator of this rank on GPU `ordinal`, over the ranks of `bootstrap`, from
// the backend's table. Errors: a backend built without NCCL, or NCCL failing to start.
Expected<std::unique_ptr<Communicator>> OpenNcclCommunicator(const CudaBackend& backend, Communicator& bootstrap,
                                                             int ordinal, std::chrono::milliseconds timeout);

}  // namespace onnx_amp
