#include "runtime/dist/rank_gpu.h"

#include <cerrno>
#include <cstdlib>

namespace onnx_amp {

std::optional<int> LauncherLocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && errno == 0 && rank >= 0 && rank <= 1 << 20) return static_cast<int>(rank);
  }
  return std::nullopt;
}

std::string RankGpu::Describe() const {
  return "GPU " + std::to_string(ordinal) + " of " + std::to_string(visible) + " (" +
         (local_rank_known ? "local rank " : "no local rank from the launcher: world rank ") +
         std::to_string(local_rank) + ")";
}

Expected<RankGpu> ChooseRankGpu(std::optional<int> local_rank, int world_rank, int visible_gpus) {
  if (visible_gpus <= 0) {
    return Unsupported("--device cuda: no CUDA device is visible to rank " + std::to_string(world_rank) +
                       " (check CUDA_VISIBLE_DEVICES and the driver on its machine)");
  }
  RankGpu gpu;
  gpu.local_rank_known = local_rank.has_value();
  gpu.local_rank = local_rank.value_or(world_rank);
  gpu.visible = visible_gpus;
  gpu.ordinal = gpu.local_rank % visible_gpus;
  return gpu;
}

Expected<std::unique_ptr<Communicator>> OpenNcclCommunicator(const CudaBackend& backend, Communicator& bootstrap,
                                                             int ordinal, std::chrono::milliseconds timeout) {
  if (backend.open_nccl_communicator == nullptr) {
    return Unsupported(
        "--device cuda under mpirun: the CUDA backend was built without NCCL (tools/install-deps installs it "
        "where nvcc is present; rebuild afterwards)");
  }
  Expected<std::unique_ptr<Communicator>> communicator = backend.open_nccl_communicator(&bootstrap, ordinal, timeout);
  if (!communicator.ok()) {
    return communicator.status().WithContext("NCCL on GPU " + std::to_string(ordinal) + " (rank " +
                                             std::to_string(bootstrap.rank()) + " of " +
                                             std::to_string(bootstrap.size()) + ")");
  }
  return communicator;
}

}  // namespace onnx_amp
