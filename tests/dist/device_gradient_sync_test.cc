// DeviceGradientSync, the gradient all-reduce of data-parallel training on GPUs, checked on
// the CPU: each rank's "GPU" is a host-backed device (tests/runtime/host_backed_device.h)
// and NCCL is stood in for by in-process ranks (thread_communicator.h), which reduce the
// same memory NCCL would. Exact sums in device buckets (gradients made on the device and
// micro-batch sums made on the host), the loss summed, views that survive the next step,
// an inf or NaN in one rank's gradient reaching every rank's sum, and the skip agreement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/dist/device_gradient_sync.h"
#include "tests/dist/thread_communicator.h"
#include "tests/runtime/host_backed_device.h"

namespace onnx_amp {
namespace {

using testing::HostBackedDevice;
using testing::ThreadCommunicator;
using testing::ThreadGroup;

constexpr int64_t kSizes[] = {100, 3, 40};
// 128 float32 per bucket: gradients 0 and 1 (112 + 16 padded elements) share the first
// bucket, gradient 2 and the loss take the second.
constexpr int64_t kBucketBytes = 128 * sizeof(float);

// Rank `rank`'s gradient `p`, element i: (rank + 1)(p + 1) + i / 2, exact in float32, and
// so is every sum of them.
float Value(int rank, size_t p, int64_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(p + 1)) + 0.5f * static_cast<float>(i);
}

float SummedValue(size_t p, int64_t i) { return Value(0, p, i) + Value(1, p, i); }

Tensor HostGradient(int rank, size_t p) {
  Tensor host = Tensor::Empty(DType::kFloat32, {kSizes[p]});
  for (int64_t i = 0; i < kSizes[p]; ++i) host.data<float>()[i] = Value(rank, p, i);
  return host;
}

// Gradients 0 and 2 on the device (as the training graph leaves them), gradient 1 a host
// tensor (as a sum over micro-batches is).
std::vector<Tensor> Gradients(int rank, Device& device) {
  std::vector<Tensor> gradients;
  for (size_t p = 0; p < std::size(kSizes); ++p) {
    Tensor host = HostGradient(rank, p);
    if (p == 1) {
      gradients.push_back(host);
      continue;
    }
    Expected<Tensor> on_device = CopyToDevice(host, device);
    EXPECT_TRUE(on_device.ok()) << on_device.status().message();
    gradients.push_back(*on_device);
  }
  return gradients;
}

TEST(DeviceGradientSync, SumsEveryRanksGradientsAndLossInDeviceBuckets) {
  ThreadGroup group(2);
  group.Run([&](int rank) {
    HostBackedDevice device{KernelRegistry()};
    ThreadCommunicator communicator(group, rank);
    DeviceGradientSync sync(communicator, communicator, device, kBucketBytes);
    std::vector<Tensor> gradients = Gradients(rank, device);
    double loss = rank == 0 ? 1.5 : 2.25;
    device.copies_to_host = 0;
    ASSERT_TRUE(sync.SumGradients(gradients, loss, 1).ok());
    EXPECT_EQ(loss, 3.75);
    EXPECT_EQ(device.copies_to_host, 1) << "only the loss comes back to the host";
    EXPECT_EQ(communicator.collectives(), 2) << "one all-reduce per bucket";
    EXPECT_EQ(sync.volume().buckets, 2);
    EXPECT_EQ(sync.volume().payload_bytes, (128 + 48 + 16) * 4);
    for (size_t p = 0; p < gradients.size(); ++p) {
      EXPECT_EQ(gradients[p].device(), DeviceKind::kCuda) << "the sums stay on the device";
      ASSERT_EQ(gradients[p].num_elements(), kSizes[p]);
      for (int64_t i = 0; i < kSizes[p]; ++i) {
        ASSERT_EQ(gradients[p].data<float>()[i], SummedValue(p, i)) << "gradient " << p << " element " << i;
      }
    }
    EXPECT_EQ(gradients[0].buffer(), gradients[1].buffer()) << "views into one bucket";
    EXPECT_NE(gradients[1].buffer(), gradients[2].buffer());
  });
}

TEST(DeviceGradientSync, HeldSumsSurviveTheNextStep) {
  ThreadGroup group(2);
  group.Run([&](int rank) {
    HostBackedDevice device{KernelRegistry()};
    ThreadCommunicator communicator(group, rank);
    DeviceGradientSync sync(communicator, communicator, device, kBucketBytes);
    std::vector<Tensor> held = Gradients(rank, device);
    double loss = 1.0;
    ASSERT_TRUE(sync.SumGradients(held, loss, 1).ok());
    std::vector<Tensor> next = Gradients(rank + 2, device);
    loss = 1.0;
    ASSERT_TRUE(sync.SumGradients(next, loss, 2).ok());
    for (size_t p = 0; p < held.size(); ++p) {
      for (int64_t i = 0; i < kSizes[p]; ++i) {
        ASSERT_EQ(held[p].data<float>()[i], SummedValue(p, i)) << "step 1's sums were overwritten";
        ASSERT_EQ(next[p].data<float>()[i], Value(2, p, i) + Value(3, p, i));
      }
    }
    EXPECT_EQ(loss, 2.0);
  });
}

// Why the skip decision needs no extra care to reach every rank in the common case: an
// inf or NaN on one rank is in every rank's sum. (The MAX agreement is what guarantees it:
// DeviceReplicaTrainer.RanksWhoseSumsDifferStillSkipTogether.)
TEST(DeviceGradientSync, NonFiniteValueOfOneRankReachesEveryRanksSum) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  ThreadGroup group(2);
  group.Run([&](int rank) {
    HostBackedDevice device{KernelRegistry()};
    ThreadCommunicator communicator(group, rank);
    DeviceGradientSync sync(communicator, communicator, device, kBucketBytes);
    std::vector<Tensor> gradients = Gradients(rank, device);
    if (rank == 1) gradients[2].data<float>()[5] = kInf;                 // inf + finite
    gradients[0].data<float>()[7] = rank == 0 ? -kInf : kInf;            // -inf + inf
    double loss = 1.0;
    ASSERT_TRUE(sync.SumGradients(gradients, loss, 1).ok());
    EXPECT_EQ(gradients[2].data<float>()[5], kInf);
    EXPECT_TRUE(std::isnan(gradients[0].data<float>()[7]));
    EXPECT_EQ(gradients[2].data<float>()[4], SummedValue(2, 4)) << "the neighbours are untouched";
  });
}

TEST(DeviceGradientSync, EveryRankTakesTheSkipAndTheLowestNonFiniteIndex) {
  struct Case {
    bool skip[2];
    int64_t first[2];
    bool want_skip;
    int64_t want_first;
  };
  const Case cases[] = {{{false, true}, {-1, 2}, true, 2},
                        {{true, true}, {4, 1}, true, 1},
                        {{true, false}, {-1, -1}, true, -1},  // a non-finite loss alone
                        {{false, false}, {-1, -1}, false, -1}};
  for (const Case& c : cases) {
    ThreadGroup group(2);
    group.Run([&](int rank) {
      HostBackedDevice device{KernelRegistry()};
      ThreadCommunicator communicator(group, rank);
      DeviceGradientSync sync(communicator, communicator, device);
      bool skip = c.skip[rank];
      int64_t first = c.first[rank];
      ASSERT_TRUE(sync.AgreeOnSkip(skip, first, 1).ok());
      EXPECT_EQ(skip, c.want_skip);
      EXPECT_EQ(first, c.want_first);
      EXPECT_EQ(device.copies_to_host + device.copies_to_device, 0) << "host values stay on the host";
    });
  }
}

TEST(DeviceGradientSync, ReplicaCheckFailsOnEveryRankWhenOneDiffers) {
  ThreadGroup group(2);
  Status status[2];
  group.Run([&](int rank) {
    HostBackedDevice device{KernelRegistry()};
    ThreadCommunicator communicator(group, rank);
    DeviceGradientSync sync(communicator, communicator, device);
    status[rank] = sync.CheckSameState(rank == 0 ? 0x1234 : 0x5678, "weights at the start");
  });
  for (const Status& s : status) {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("weights at the start"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace onnx_amp
