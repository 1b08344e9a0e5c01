#include "runtime/dist/mpi_communicator.h"

#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>

namespace onnx_amp {
namespace {

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

Status MpiStatus(int code, std::string_view call, std::string_view what) {
  if (code == MPI_SUCCESS) return Status::Ok();
  return IoError(std::string(call) + " (" + std::string(what) + "): " + MpiErrorText(code));
}

Expected<MPI_Datatype> MpiType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt64:
      return MPI_INT64_T;
    default:
      return InternalError("MPI collectives take float32, float64 or int64, not " + std::string(DTypeName(dtype)));
  }
}

// Ranks on this node from the launcher's environment (Open MPI, then PMIx), or 1.
int LocalSizeFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* value = std::getenv(name)) {
      const int size = std::atoi(value);
      if (size > 0) return size;
    }
  }
  return 1;
}

// Completes `request` without holding the core: a rank waiting for a slower one spins for
// a few microseconds, then sleeps in growing naps (at most 100 us). A blocking MPI call
// would spin at full speed, and with more ranks and threads than cores (two ranks on two
// cores next to any other work) the spinning rank steals the time the rank it waits for
// needs: steps of a millisecond then took hundreds.
int WaitYieldingCore(MPI_Request& request) {
  using Clock = std::chrono::steady_clock;
  const auto spin_until = Clock::now() + std::chrono::microseconds(20);
  long nap_ns = 1000;
  while (true) {
    int done = 0;
    const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS || done) return code;
    if (Clock::now() < spin_until) continue;
    const timespec nap{0, nap_ns};
    nanosleep(&nap, nullptr);
    nap_ns = std::min(nap_ns * 2, 100000L);
  }
}

// Starts MPI_Iallreduce in place over MPI_COMM_WORLD.
Status StartIallreduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what,
                       MPI_Request& request) {
  if (count > std::numeric_limits<int>::max()) {
    return InternalError("all-reduce of " + std::to_string(count) + " elements exceeds one MPI call; use buckets");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const MPI_Datatype type, MpiType(dtype));
  const int code = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type,
                                  op == ReduceOp::kSum ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD, &request);
  return MpiStatus(code, "MPI_Iallreduce", what);
}

class MpiPendingCollective final : public PendingCollective {
 public:
  MpiPendingCollective(MPI_Request request, CollectiveWatchdog& watchdog, std::string_view what)
      : request_(request), watchdog_(watchdog), what_(what) {}
  ~MpiPendingCollective() override {
    if (request_ != MPI_REQUEST_NULL) (void)Wait();
  }

  Expected<bool> Test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    ONNX_AMP_RETURN_IF_ERROR(MpiStatus(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test", what_));
    return done != 0;
  }

  Status Wait() override {
    if (request_ == MPI_REQUEST_NULL) return Status::Ok();
    watchdog_.Arm(what_);
    const int code = WaitYieldingCore(request_);
    watchdog_.Disarm();
    request_ = MPI_REQUEST_NULL;  // an error is reported once
    return MpiStatus(code, "MPI_Iallreduce", what_);
  }

 private:
  MPI_Request request_;  // MPI_REQUEST_NULL once complete
  CollectiveWatchdog& watchdog_;
  const std::string what_;
};

}  // namespace

bool LaunchedByMpiLauncher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

MpiCommunicator::MpiCommunicator(int rank, int size, int local_size, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), local_size_(local_size), watchdog_(timeout, rank, size) {}

Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(std::chrono::milliseconds timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; the watchdog thread never does.
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (code != MPI_SUCCESS) return IoError("MPI_Init_thread failed: " + MpiErrorText(code));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size, LocalSizeFromEnvironment(), timeout));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status MpiCommunicator::AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view what) {
  watchdog_.Arm(what);
  MPI_Request request;
  Status status = StartIallreduce(data, count, dtype, op, what, request);
  if (status.ok()) status = MpiStatus(WaitYieldingCore(request), "MPI_Iallreduce", what);
  watchdog_.Disarm();
  return status;
}

Expected<std::unique_ptr<PendingCollective>> MpiCommunicator::StartAllReduce(void* data, int64_t count, DType dtype,
                                                                             ReduceOp op, std::string_view what) {
  MPI_Request request;
  ONNX_AMP_RETURN_IF_ERROR(StartIallreduce(data, count, dtype, op, what, request));
  return std::unique_ptr<PendingCollective>(new MpiPendingCollective(request, watchdog_, what));
}

Status MpiCommunicator::Broadcast(void* data, int64_t bytes, int root, std::string_view what) {
  if (bytes > std::numeric_limits<int>::max()) return InternalError("broadcast of more than 2 GiB in one MPI call");
  watchdog_.Arm(what);
  MPI_Request request;
  int code = MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
  if (code == MPI_SUCCESS) code = WaitYieldingCore(request);
  watchdog_.Disarm();
  return MpiStatus(code, "MPI_Ibcast", what);
}

void MpiCommunicator::Abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

}  // namespace onnx_amp
