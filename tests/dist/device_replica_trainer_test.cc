// Two trainers on devices joined by DeviceGradientSync, as `mpirun -np 2 onnx-amp train
// --device cuda` joins two GPUs, checked on the CPU: each rank's device is host-backed with
// the CPU kernels (tests/runtime/host_backed_device.h) and NCCL is stood in for by
// in-process ranks. Against two CPU trainers joined by GradientSync (the host path, sums
// after the backward pass): the same losses, the same skip decisions and the same weights,
// bit for bit. An inf in one rank's gradient reaches every rank's sums, so both ranks skip
// and halve one scale. An inf in one rank's *sums* only (ranks whose reductions disagree)
// cannot be undone by the skip agreement, the other rank's update having run in place: the
// trainer stops with an error there, and without the agreement the replicas silently split.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "ops/cpu_kernels.h"
#include "runtime/dist/device_gradient_sync.h"
#include "runtime/dist/gradient_sync.h"
#include "tests/dist/forwarding_sync.h"
#include "tests/dist/thread_communicator.h"
#include "tests/dist/trainer_fixtures.h"
#include "tests/runtime/host_backed_device.h"

namespace onnx_amp {
namespace {

using testing::ForwardingSync;
using testing::HostBackedDevice;
using testing::MakeBatch;
using testing::MirrorKernels;
using testing::MixedFloat16Trainer;
using testing::ThreadCommunicator;
using testing::ThreadGroup;

constexpr size_t kPlanted = 2;       // dense2's kernel
constexpr int64_t kPlantedStep = 2;  // of 3
constexpr int kSteps = 3;

// Every CPU kernel, also as a kernel of the device; the optimizer-step ops read their
// scalars on the host, as the CUDA kernels do.
HostBackedDevice MirrorDevice() {
  return HostBackedDevice(MirrorKernels(
      CpuKernelRegistry(), [](const KernelDef&) { return true; },
      [](KernelDef& def) {
        if (def.op_type == "UnscaleAndCheck" || def.op_type == "GlobalNormClip") def.host_inputs = 1u << 0;
        if (def.op_type == "AdamUpdate") def.host_inputs = (1u << 4) | (1u << 5);
      }));
}

enum class Plant {
  kNone,
  kGradient,  // rank 1's gradient gets an inf before the all-reduce (an overflow in its backward pass)
  kSum,       // rank 1's summed gradient gets one after it (rank 0's sums stay finite)
};

// Plants on rank 1 at kPlantedStep; `agree` false drops the skip agreement (the control).
class PlantingSync final : public ForwardingSync {
 public:
  PlantingSync(ReplicaSync& inner, Plant plant, bool agree) : ForwardingSync(inner), plant_(plant), agree_(agree) {}
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override {
    const bool here = rank() == 1 && step == kPlantedStep;
    if (here && plant_ == Plant::kGradient) gradients[kPlanted] = WithInf(gradients[kPlanted]);
    ONNX_AMP_RETURN_IF_ERROR(inner_.SumGradients(gradients, loss_sum, step));
    // The host-backed device's memory is the host's: the sum is written where it lies.
    if (here && plant_ == Plant::kSum) gradients[kPlanted].data<float>()[Middle(gradients[kPlanted])] = kInf;
    return Status::Ok();
  }
  Status AgreeOnSkip(bool& skip, int64_t& first, int64_t step) override {
    return agree_ ? inner_.AgreeOnSkip(skip, first, step) : Status::Ok();
  }

 private:
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  static int64_t Middle(const Tensor& tensor) { return tensor.num_elements() / 2; }
  // A host copy with an inf in the middle (both syncs take host gradients).
  static Tensor WithInf(const Tensor& gradient) {
    Tensor planted = Tensor::Empty(DType::kFloat32, gradient.shape());
    std::memcpy(planted.raw_data(), gradient.raw_data(), planted.bytes());
    planted.data<float>()[Middle(planted)] = kInf;
    return planted;
  }

  const Plant plant_;
  const bool agree_;
};

struct RankRun {
  std::vector<StepResult> steps;
  Status error;  // of the step that failed; its steps end there
  std::vector<float> weights;  // all parameters, in order
  float final_scale = 0.0f;
  std::string planted_name;
};

std::vector<float> HostWeights(Trainer& trainer) {
  EXPECT_TRUE(trainer.MoveStateToHost().ok());
  std::vector<float> all;
  for (const NamedTensor& w : trainer.weights()) {
    all.insert(all.end(), w.tensor.data<float>(), w.tensor.data<float>() + w.tensor.num_elements());
  }
  return all;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `steps` Adam steps of two ranks, each on its own batches of `micro_batches` micro-batches:
// on host-backed devices through DeviceGradientSync (`on_device`), or on the CPU through
// GradientSync summing after the backward pass. 4 KiB buckets: several per step.
void TrainTwoRanks(bool on_device, int micro_batches, Plant plant, bool agree, RankRun (&out)[2],
                   int steps = kSteps) {
  ThreadGroup group(2);
  group.Run([&](int rank) {
    HostBackedDevice device = MirrorDevice();
    std::unique_ptr<Trainer> trainer = MixedFloat16Trainer(on_device ? &device : nullptr);
    ASSERT_TRUE(trainer);
    ThreadCommunicator communicator(group, rank);
    GradientSync host_sync(communicator, 4096, /*overlap=*/false);
    DeviceGradientSync device_sync(communicator, communicator, device, 4096);
    PlantingSync sync(on_device ? static_cast<ReplicaSync&>(device_sync) : host_sync, plant, agree);
    trainer->set_replica_sync(&sync);
    out[rank].planted_name = trainer->weights()[kPlanted].name;
    for (int step = 0; step < steps; ++step) {
      std::vector<Batch> batches;
      for (int m = 0; m < micro_batches; ++m) batches.push_back(MakeBatch(100 * step + 10 * m + rank));
      Expected<StepResult> result = trainer->Step(batches);
      if (!result.ok()) {
        out[rank].error = result.status();
        break;
      }
      out[rank].steps.push_back(*result);
    }
    if (on_device) {
      EXPECT_GT(device_sync.volume().buckets, 1);
    }
    out[rank].weights = HostWeights(*trainer);
    out[rank].final_scale = trainer->scaler().scale();
  });
}

void ExpectSameRuns(const RankRun (&host)[2], const RankRun (&device)[2]) {
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_TRUE(host[rank].error.ok()) << host[rank].error.message();
    ASSERT_TRUE(device[rank].error.ok()) << device[rank].error.message();
    ASSERT_EQ(device[rank].steps.size(), host[rank].steps.size());
    for (size_t s = 0; s < host[rank].steps.size(); ++s) {
      EXPECT_EQ(device[rank].steps[s].loss, host[rank].steps[s].loss) << "step " << s + 1;
      EXPECT_EQ(device[rank].steps[s].scale, host[rank].steps[s].scale) << "step " << s + 1;
      EXPECT_EQ(device[rank].steps[s].skipped, host[rank].steps[s].skipped) << "step " << s + 1;
      EXPECT_EQ(device[rank].steps[s].first_non_finite, host[rank].steps[s].first_non_finite);
    }
    EXPECT_TRUE(SameBits(device[rank].weights, host[rank].weights)) << "device sums differ from the host path's";
  }
  EXPECT_TRUE(SameBits(device[0].weights, device[1].weights)) << "the replicas drifted apart";
}

TEST(DeviceReplicaTrainer, SameLossesAndWeightsAsTheHostPath) {
  for (int micro_batches : {1, 2}) {
    SCOPED_TRACE(std::to_string(micro_batches) + " micro-batches");
    RankRun host[2], device[2];
    TrainTwoRanks(false, micro_batches, Plant::kNone, true, host);
    TrainTwoRanks(true, micro_batches, Plant::kNone, true, device);
    ExpectSameRuns(host, device);
    for (const StepResult& step : device[0].steps) EXPECT_FALSE(step.skipped);
    EXPECT_EQ(device[0].steps[0].loss, device[1].steps[0].loss) << "the loss is the mean over both ranks";
  }
}

TEST(DeviceReplicaTrainer, InfInOneRanksGradientSkipsEveryRankAsOnTheHostPath) {
  RankRun host[2], device[2];
  TrainTwoRanks(false, 1, Plant::kGradient, true, host);
  TrainTwoRanks(true, 1, Plant::kGradient, true, device);
  ExpectSameRuns(host, device);
  for (int rank = 0; rank < 2; ++rank) {
    const StepResult& planted = device[rank].steps[kPlantedStep - 1];
    EXPECT_TRUE(planted.skipped) << "rank " << rank;
    EXPECT_EQ(planted.first_non_finite, device[rank].planted_name);
    EXPECT_EQ(planted.scale, 32768.0f);
    EXPECT_EQ(device[rank].steps[kPlantedStep].scale, 16384.0f) << "one halving, on every rank";
  }
}

TEST(DeviceReplicaTrainer, RanksWhoseSumsDifferStopWithAnErrorInsteadOfDrifting) {
  // The run ends at the planted step: the rank that fails there leaves the group.
  RankRun device[2];
  TrainTwoRanks(true, 1, Plant::kSum, true, device, kPlantedStep);
  ASSERT_FALSE(device[0].error.ok()) << "rank 0's sums were finite, its update ran, the agreement says skip";
  EXPECT_NE(device[0].error.message().find("step 2: rank 0's summed gradients were finite"), std::string::npos)
      << device[0].error.message();
  ASSERT_TRUE(device[1].error.ok()) << device[1].error.message();
  EXPECT_TRUE(device[1].steps[kPlantedStep - 1].skipped);
  EXPECT_EQ(device[1].steps[kPlantedStep - 1].first_non_finite, device[1].planted_name);

  // The control: without the agreement the ranks part silently, one updating, one skipping.
  RankRun split[2];
  TrainTwoRanks(true, 1, Plant::kSum, /*agree=*/false, split, kPlantedStep);
  ASSERT_TRUE(split[0].error.ok() && split[1].error.ok());
  EXPECT_FALSE(split[0].steps[kPlantedStep - 1].skipped);
  EXPECT_TRUE(split[1].steps[kPlantedStep - 1].skipped);
  EXPECT_FALSE(SameBits(split[0].weights, split[1].weights));
}

}  // namespace
}  // namespace onnx_amp
