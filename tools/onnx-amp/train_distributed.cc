#include "tools/onnx-amp/train_distributed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/dist/rank_gpu.h"
#include "runtime/dist/stop_message.h"
#include "runtime/exec/cuda_backend.h"
#include "tools/onnx-amp/cli_errors.h"

namespace onnx_amp {

void AddDistributedFlags(CLI::App& command, DistributedFlags& flags) {
  command.add_option("--dist-timeout", flags.timeout_seconds,
                     "Under mpirun: seconds a rank waits in one all-reduce before it ends the job with an error "
                     "naming the step (0: wait forever)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--dist-bucket-mib", flags.bucket_mib,
                     "Under mpirun: MiB of gradients summed per all-reduce call")
      ->check(CLI::PositiveNumber);
  command.add_flag("--no-dist-overlap", flags.no_overlap,
                   "Under mpirun: sum the gradient buckets after the backward pass instead of starting each one "
                   "as soon as its gradients are final (for comparison; the sums are the same)");
}

DistributedTraining::DistributedTraining(std::unique_ptr<MpiCommunicator> communicator,
                                         std::chrono::milliseconds timeout, int64_t bucket_bytes, bool overlap)
    : communicator_(std::move(communicator)),
      timeout_(timeout),
      bucket_bytes_(bucket_bytes),
      sync_(std::make_unique<GradientSync>(*communicator_, bucket_bytes, overlap)) {}

Expected<std::unique_ptr<DistributedTraining>> DistributedTraining::StartIfLaunched(const DistributedFlags& flags) {
  if (!LaunchedByMpiLauncher()) return std::unique_ptr<DistributedTraining>();
  if (!std::isfinite(flags.timeout_seconds) || flags.timeout_seconds < 0.0) {
    return InvalidArgument("--dist-timeout must be a finite number of seconds >= 0");
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000.0));
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> communicator, MpiCommunicator::Create(timeout));
  InstallStopMessage(communicator->rank(), communicator->size());
  const auto bucket_bytes = static_cast<int64_t>(std::max(flags.bucket_mib, 1.0 / 1024.0) * 1024.0 * 1024.0);
  const bool overlap = !flags.no_overlap;
  return std::unique_ptr<DistributedTraining>(
      new DistributedTraining(std::move(communicator), timeout, bucket_bytes, overlap));
}

Expected<Device*> DistributedTraining::OpenDevice(const DeviceFlags& flags) {
  if (flags.device == "cuda") {
    ONNX_AMP_RETURN_IF_ERROR(OpenRankGpu(flags));
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(device_, onnx_amp::OpenDevice(flags));
  }
  return device_.get();
}

Status DistributedTraining::OpenRankGpu(const DeviceFlags& flags) {
#if ONNX_AMP_WITH_CUDA
  Expected<const CudaBackend*> backend = LoadCudaBackend();
  if (!backend.ok()) return backend.status().WithContext("--device cuda");
  ONNX_AMP_ASSIGN_OR_RETURN(const RankGpu gpu,
                            ChooseRankGpu(LauncherLocalRank(), rank(), (*backend)->visible_devices()));
  ONNX_AMP_ASSIGN_OR_RETURN(device_, onnx_amp::OpenDevice(flags, gpu.ordinal));
  std::fprintf(stderr, "rank %d of %d: %s: %s\n", rank(), ranks(), gpu.Describe().c_str(),
               device_->Describe().c_str());
  if (ranks() == 1) return Status::Ok();  // N = 1: no NCCL, the single-process path
  ONNX_AMP_ASSIGN_OR_RETURN(nccl_, OpenNcclCommunicator(**backend, *communicator_, gpu.ordinal, timeout_));
  device_sync_ = std::make_unique<DeviceGradientSync>(*nccl_, *communicator_, *device_, bucket_bytes_);
  return Status::Ok();
#else
  ONNX_AMP_ASSIGN_OR_RETURN(device_, onnx_amp::OpenDevice(flags));  // the error naming the build
  return Status::Ok();
#endif
}

ReplicaSync* DistributedTraining::sync() {
  if (ranks() == 1) return nullptr;
  if (device_sync_ != nullptr) return device_sync_.get();
  return sync_.get();
}

const GradientSyncVolume& DistributedTraining::volume() const {
  return device_sync_ != nullptr ? device_sync_->volume() : sync_->volume();
}

int DistributedTraining::DefaultThreads() const {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, communicator_->local_size()));
}

std::string DistributedTraining::Describe(int64_t batch_size, int64_t accumulation_steps) const {
  const bool on_gpus = device_sync_ != nullptr;
  char line[320];
  std::snprintf(line, sizeof(line),
                "data parallel over %d ranks (%s): %lld samples per step (%lld per rank = %lld x %lld "
                "micro-batches); gradients summed in float32 %s",
                ranks(), on_gpus ? "NCCL over the ranks' GPUs, bootstrapped over Open MPI" : "Open MPI",
                static_cast<long long>(batch_size * accumulation_steps * ranks()),
                static_cast<long long>(batch_size * accumulation_steps), static_cast<long long>(batch_size),
                static_cast<long long>(accumulation_steps),
                on_gpus                      ? "on the GPUs after the backward pass"
                : sync_->overlaps_backward() ? "beside the backward pass"
                                             : "after the backward pass");
  return line;
}

std::string DistributedTraining::DescribeVolume() const {
  const GradientSyncVolume& volume = this->volume();
  char line[192];
  std::snprintf(line, sizeof(line),
                "all-reduce per step and rank: %.1f KiB of float32 gradients and loss in %lld bucket(s), %lld "
                "collectives",
                static_cast<double>(volume.payload_bytes) / 1024.0, static_cast<long long>(volume.buckets),
                static_cast<long long>(volume.collectives));
  return line;
}

void DistributedTraining::Abort(const Status& status) {
  RemoveStopMessage();
  std::fprintf(stderr, "onnx-amp: error: rank %d of %d: %s\n", rank(), ranks(), status.message().c_str());
  std::fflush(stderr);
  communicator_->Abort(ExitCodeFor(status.code()));
}

}  // namespace onnx_amp
