// The host-side decisions of `mpirun -np N onnx-amp train --device cuda`, without a GPU:
// which GPU a rank takes (its local rank from the launcher, modulo the visible GPUs), the
// error without a GPU, and the NCCL communicator from the CUDA backend's table (a backend
// built without NCCL, NCCL failing to start, the arguments it is opened with).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/dist/rank_gpu.h"
#include "tests/dist/thread_communicator.h"

namespace onnx_amp {
namespace {

using testing::ThreadCommunicator;
using testing::ThreadGroup;

// Sets the launcher variables for the test's scope and restores them afterwards.
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const char* name : kNames) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(RankGpu, LocalRankComesFromTheLauncher) {
  {
    ScopedEnvironment environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}});
    EXPECT_EQ(LauncherLocalRank(), 3);
  }
  {
    ScopedEnvironment environment({{"MPI_LOCALRANKID", "1"}});
    EXPECT_EQ(LauncherLocalRank(), 1);
  }
  {
    ScopedEnvironment environment({{"SLURM_LOCALID", "2"}});
    EXPECT_EQ(LauncherLocalRank(), 2);
  }
  {
    ScopedEnvironment environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "two"}});
    EXPECT_EQ(LauncherLocalRank(), std::nullopt);
  }
  {
    ScopedEnvironment environment({});
    EXPECT_EQ(LauncherLocalRank(), std::nullopt);
  }
}

TEST(RankGpu, RanksSpreadOverTheVisibleGpusAndWrapAround) {
  const int expected[] = {0, 1, 2, 0, 1, 2, 0};
  for (int local = 0; local < 7; ++local) {
    Expected<RankGpu> gpu = ChooseRankGpu(local, /*world_rank=*/local + 8, 3);
    ASSERT_TRUE(gpu.ok());
    EXPECT_EQ(gpu->ordinal, expected[local]) << "local rank " << local;
    EXPECT_EQ(gpu->Describe(), "GPU " + std::to_string(expected[local]) + " of 3 (local rank " +
                                   std::to_string(local) + ")");
  }
  Expected<RankGpu> one = ChooseRankGpu(1, 1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->ordinal, 0) << "two ranks on one GPU share it";
}

TEST(RankGpu, WorldRankStandsInWithoutALocalRank) {
  Expected<RankGpu> gpu = ChooseRankGpu(std::nullopt, 5, 4);
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->ordinal, 1);
  EXPECT_FALSE(gpu->local_rank_known);
  EXPECT_NE(gpu->Describe().find("world rank 5"), std::string::npos) << gpu->Describe();
}

TEST(RankGpu, NoVisibleGpuIsAnErrorNamingTheRank) {
  Expected<RankGpu> gpu = ChooseRankGpu(0, 3, 0);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(gpu.status().message().find("no CUDA device is visible to rank 3"), std::string::npos)
      << gpu.status().message();
}

// What the fake NCCL factories below were called with.
struct FactoryCall {
  Communicator* bootstrap = nullptr;
  int device = -1;
  std::chrono::milliseconds timeout{0};
};
FactoryCall last_call;

Expected<std::unique_ptr<Communicator>> FailingNccl(Communicator* bootstrap, int device,
                                                    std::chrono::milliseconds timeout) {
  last_call = {bootstrap, device, timeout};
  return IoError("ncclCommInitRank: unhandled system error");
}

ThreadGroup single_rank(1);

Expected<std::unique_ptr<Communicator>> WorkingNccl(Communicator* bootstrap, int device,
                                                    std::chrono::milliseconds timeout) {
  last_call = {bootstrap, device, timeout};
  return std::unique_ptr<Communicator>(new ThreadCommunicator(single_rank, 0));
}

CudaBackend TableWith(decltype(CudaBackend::open_nccl_communicator) factory) {
  CudaBackend table{};
  table.interface_version = kCudaBackendInterfaceVersion;
  table.table_size = sizeof(CudaBackend);
  table.open_nccl_communicator = factory;
  return table;
}

TEST(RankGpu, BackendWithoutNcclIsAnErrorNamingIt) {
  ThreadGroup group(1);
  ThreadCommunicator bootstrap(group, 0);
  Expected<std::unique_ptr<Communicator>> nccl =
      OpenNcclCommunicator(TableWith(nullptr), bootstrap, 0, std::chrono::seconds(1));
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(nccl.status().message().find("built without NCCL"), std::string::npos) << nccl.status().message();
}

TEST(RankGpu, NcclFailingToStartNamesTheGpuAndTheRank) {
  ThreadGroup group(1);
  ThreadCommunicator bootstrap(group, 0);
  Expected<std::unique_ptr<Communicator>> nccl =
      OpenNcclCommunicator(TableWith(&FailingNccl), bootstrap, 2, std::chrono::seconds(7));
  ASSERT_FALSE(nccl.ok());
  const std::string& message = nccl.status().message();
  EXPECT_NE(message.find("NCCL on GPU 2 (rank 0 of 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclCommInitRank: unhandled system error"), std::string::npos) << message;
}

TEST(RankGpu, NcclIsOpenedOverTheBootstrapOnTheRanksGpu) {
  ThreadGroup group(1);
  ThreadCommunicator bootstrap(group, 0);
  Expected<std::unique_ptr<Communicator>> nccl =
      OpenNcclCommunicator(TableWith(&WorkingNccl), bootstrap, 1, std::chrono::seconds(9));
  ASSERT_TRUE(nccl.ok()) << nccl.status().message();
  EXPECT_EQ(last_call.bootstrap, &bootstrap);
  EXPECT_EQ(last_call.device, 1);
  EXPECT_EQ(last_call.timeout, std::chrono::seconds(9));
}

}  // namespace
}  // namespace onnx_amp
