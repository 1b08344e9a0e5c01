// The weight's low-precision copy an update op may rewrite (runtime/train/weight_copies.h
// says why): it holds the bits a Cast of the new weight gives (float16.h's scalar
// rounding), for every optimizer, in place or not; a skip hands it back untouched; the
// update graph built with copy types passes the ONNX checker and rewrites them.
#include <gtest/gtest.h>
#include <onnx/checker.h>

#include <bit>
#include <cstring>
#include <limits>

#include "ops/onnx_amp_schemas.h"
#include "ops/training/optimizer_math.h"
#include "runtime/core/float16.h"
#include "runtime/train/update_graph.h"
#include "tests/train/update_op_runner.h"

namespace onnx_amp {
namespace {

using namespace testing;  // update_op_runner.h

// The float16 or bfloat16 bits of each new weight, rounded by float16.h's scalar functions.
std::vector<uint16_t> Rounded(const std::vector<float>& weights, DType type) {
  std::vector<uint16_t> bits;
  for (float w : weights) bits.push_back(type == DType::kBFloat16 ? FloatToBFloat16Bits(w) : FloatToHalfBits(w));
  return bits;
}

bool SameBits(const std::vector<uint16_t>& expected, const Tensor& copy) {
  return static_cast<int64_t>(expected.size()) == copy.num_elements() &&
         std::memcmp(expected.data(), copy.raw_data(), expected.size() * sizeof(uint16_t)) == 0;
}

// Weights whose updates land everywhere a rounding can go wrong: beyond float16's range
// (a Cast overflows to inf), NaN, signed zero, float16 subnormals, and random values
// (ties to even among them are rare, so a few are made exact ties for bfloat16).
Tensor CopyTestWeights() {
  Tensor w = Random(40, -1.0f, 1.0f);
  float* data = w.data<float>();
  data[0] = 70000.0f;
  data[1] = -1e6f;
  data[2] = std::numeric_limits<float>::quiet_NaN();
  data[3] = -0.0f;
  data[4] = 3e-6f;
  data[5] = std::numeric_limits<float>::infinity();
  for (int i = 6; i < 16; ++i) data[i] = std::bit_cast<float>(0x3F808000u + (static_cast<uint32_t>(i) << 16));
  return w;
}

// A tensor of its own holding `tensor`'s values: an in-place update may write it.
Tensor Fresh(const Tensor& tensor) {
  Tensor fresh = Tensor::Empty(tensor.dtype(), tensor.shape());
  std::memcpy(fresh.raw_data(), tensor.raw_data(), tensor.bytes());
  return fresh;
}

Tensor EmptyCopy(DType type) {
  Tensor copy = Tensor::Empty(type, {kCount});
  std::memset(copy.raw_data(), 0xAB, copy.bytes());
  return copy;
}

TEST(UpdateOps, NewCopyHoldsTheNewWeightRoundedAsACastRoundsIt) {
  const Tensor w = CopyTestWeights();
  Tensor g = Random(41, -3.0f, 3.0f);
  float* gradient = g.data<float>();
  for (int i = 6; i < 16; ++i) gradient[i] = 0.0f;  // the ties stay ties under SGD without momentum
  const Tensor v = Random(42, 0.0f, 2.0f);
  const Tensor m = Random(43, -0.5f, 0.5f);
  const float lr = 0.01f;
  for (const DType type : {DType::kBFloat16, DType::kFloat16}) {
    for (const bool in_place : {false, true}) {
      const std::string label = std::string(DTypeName(type)) + (in_place ? " in place" : "");
      // Plain SGD: no velocity, so the copy's output follows an absent one.
      {
        std::vector<float> expected = Values(w);
        for (int64_t i = 0; i < kCount; ++i) {
          float unused = 0.0f;
          SgdUpdate(expected[i], unused, g.data<float>()[i], lr, 0.0f, false);
        }
        const Tensor copy = EmptyCopy(type);
        Expected<RunResult> run = RunNode(
            "SgdUpdate",
            {{"w", Fresh(w)}, {"g", g}, {"", Tensor()}, {"lr", Scalar(lr)}, {"skip", Scalar(false)}, {"c", copy}},
            {"w_new", "", "c_new"}, {Int("in_place", in_place)});
        ASSERT_TRUE(run.ok()) << label << ": " << run.status().message();
        EXPECT_TRUE(BitIdentical(expected, run->outputs[0].tensor)) << label;
        EXPECT_TRUE(SameBits(Rounded(expected, type), run->outputs[1].tensor)) << "SGD " << label;
        EXPECT_EQ(run->outputs[1].tensor.raw_data() == copy.raw_data(), in_place) << label;
        EXPECT_EQ(run->outputs[1].tensor.dtype(), type);
      }
      {
        std::vector<float> expected = Values(w), ev = Values(v);
        for (int64_t i = 0; i < kCount; ++i) RmspropUpdate(expected[i], ev[i], g.data<float>()[i], lr, 0.9f, 1e-7f);
        const Tensor copy = EmptyCopy(type);
        Expected<RunResult> run = RunNode(
            "RmspropUpdate",
            {{"w", Fresh(w)}, {"g", g}, {"v", Fresh(v)}, {"lr", Scalar(lr)}, {"skip", Scalar(false)}, {"c", copy}},
            {"w_new", "v_new", "c_new"}, {Int("in_place", in_place)});
        ASSERT_TRUE(run.ok()) << label << ": " << run.status().message();
        EXPECT_TRUE(BitIdentical(expected, run->outputs[0].tensor)) << label;
        EXPECT_TRUE(SameBits(Rounded(expected, type), run->outputs[2].tensor)) << "RMSprop " << label;
      }
      {
        std::vector<float> expected = Values(w), em = Values(m), ev = Values(v);
        const float alpha = AdamStepSize(lr, 0.9f, 0.999f, 2);
        for (int64_t i = 0; i < kCount; ++i) {
          AdamUpdate(expected[i], em[i], ev[i], g.data<float>()[i], alpha, 0.9f, 0.999f, 1e-7f, 0.0f);
        }
        const Tensor copy = EmptyCopy(type);
        Expected<RunResult> run = RunNode("AdamUpdate",
                                          {{"w", Fresh(w)},
                                           {"g", g},
                                           {"m", Fresh(m)},
                                           {"v", Fresh(v)},
                                           {"lr", Scalar(lr)},
                                           {"step", Scalar<int64_t>(2)},
                                           {"skip", Scalar(false)},
                                           {"c", copy}},
                                          {"w_new", "m_new", "v_new", "c_new"}, {Int("in_place", in_place)});
        ASSERT_TRUE(run.ok()) << label << ": " << run.status().message();
        EXPECT_TRUE(BitIdentical(expected, run->outputs[0].tensor)) << label;
        EXPECT_TRUE(SameBits(Rounded(expected, type), run->outputs[3].tensor)) << "Adam " << label;
      }
    }
  }
}

TEST(UpdateOps, SkipHandsBackTheCopyAndBadCopiesAreErrors) {
  const Tensor w = Random(44, -1.0f, 1.0f);
  const Tensor g = Random(45, -1.0f, 1.0f);
  const Tensor copy = EmptyCopy(DType::kBFloat16);
  Expected<RunResult> skipped = RunNode(
      "RmspropUpdate", {{"w", w}, {"g", g}, {"v", g}, {"lr", Scalar(0.1f)}, {"skip", Scalar(true)}, {"c", copy}},
      {"w2", "v2", "c2"}, {});
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ(skipped->outputs[2].tensor.raw_data(), copy.raw_data());
  EXPECT_EQ(static_cast<const uint8_t*>(copy.raw_data())[0], 0xAB);

  Expected<RunResult> float32_copy = RunNode(
      "RmspropUpdate", {{"w", w}, {"g", g}, {"v", g}, {"lr", Scalar(0.1f)}, {"skip", Scalar(false)}, {"c", g}},
      {"w2", "v2", "c2"}, {});
  ASSERT_FALSE(float32_copy.ok());
  EXPECT_NE(float32_copy.status().message().find("float16 or bfloat16"), std::string::npos)
      << float32_copy.status().message();
  Expected<RunResult> no_output = RunNode(
      "RmspropUpdate", {{"w", w}, {"g", g}, {"v", g}, {"lr", Scalar(0.1f)}, {"skip", Scalar(false)}, {"c", copy}},
      {"w2", "v2"}, {});
  ASSERT_FALSE(no_output.ok());
  EXPECT_NE(no_output.status().message().find("come together"), std::string::npos) << no_output.status().message();
}

// With weight copies: valid ONNX for every optimizer (plain SGD's copy output follows
// an absent velocity), each copy rewritten in place from its new weight, and a parameter
// without a copy type left as it was.
TEST(UpdateGraph, RewritesTheWeightCopiesItIsGiven) {
  RegisterOnnxAmpOpSchemas();
  const std::vector<NamedTensor> parameters = {{"w", Random(50, -1.0f, 1.0f)}, {"b", Random(51, -1.0f, 1.0f, 5)}};
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kRmsprop}) {
    OptimizerConfig optimizer;
    optimizer.kind = kind;
    optimizer.momentum = 0.0f;
    const std::string label = kind == OptimizerKind::kSgd ? "SGD" : kind == OptimizerKind::kAdam ? "Adam" : "RMSprop";
    Expected<UpdateGraph> update =
        BuildUpdateGraph(parameters, optimizer, 0.0f, /*in_place=*/true, /*scaled=*/false,
                         {DType::kBFloat16, DType::kUndefined});
    ASSERT_TRUE(update.ok()) << update.status().message();
    try {
      onnx::checker::check_model(update->model, /*full_check=*/true);
    } catch (const std::exception& error) {
      FAIL() << label << ": " << error.what();
    }
    ASSERT_EQ(update->copy_inputs, (std::vector<std::string>{"w.copy", ""}));
    const int slots = SlotCount(optimizer);
    std::map<std::string, Tensor> feeds = {{kUpdateScale, Scalar(1.0f)},
                                           {kUpdateMicroBatches, Scalar<int64_t>(1)},
                                           {kUpdateLoss, Scalar(1.0f)},
                                           {kUpdateLearningRate, Scalar(0.01f)},
                                           {kUpdateStep, Scalar<int64_t>(0)}};
    std::vector<Tensor> weights;
    for (size_t p = 0; p < parameters.size(); ++p) {
      weights.push_back(Fresh(parameters[p].tensor));
      feeds[update->gradient_inputs[p]] = Random(52 + p, -1.0f, 1.0f, parameters[p].tensor.num_elements());
      feeds[parameters[p].name] = weights.back();
      for (int k = 0; k < slots; ++k) {
        feeds[update->slot_inputs[k][p]] = Tensor::Zeros(DType::kFloat32, parameters[p].tensor.shape());
      }
    }
    const Tensor copy = EmptyCopy(DType::kBFloat16);
    feeds["w.copy"] = copy;
    Expected<std::unique_ptr<Executor>> executor = Executor::Create(update->model);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    Expected<RunResult> run = (*executor)->Run(feeds);
    ASSERT_TRUE(run.ok()) << label << ": " << run.status().message();
    // skip, first non-finite, then w's weight, slots and copy, then b's weight and slots.
    ASSERT_EQ(run->outputs.size(), 2u + 2u * (1u + slots) + 1u) << label;
    const RunResult& result = *run;
    const NamedTensor& new_copy = result.outputs[2 + 1 + slots];
    EXPECT_EQ(new_copy.name, "w.copy.new");
    EXPECT_EQ(new_copy.tensor.raw_data(), copy.raw_data()) << label << ": written in place";
    EXPECT_TRUE(SameBits(Rounded(Values(result.outputs[2].tensor), DType::kBFloat16), new_copy.tensor)) << label;
    EXPECT_FALSE(BitIdentical(Values(parameters[0].tensor), result.outputs[2].tensor)) << label << ": trained";
  }
  Expected<UpdateGraph> float32_copy =
      BuildUpdateGraph(parameters, {}, 0.0f, true, true, {DType::kFloat32, DType::kUndefined});
  ASSERT_FALSE(float32_copy.ok());
  EXPECT_NE(float32_copy.status().message().find("float16 or bfloat16"), std::string::npos);
  ASSERT_FALSE(BuildUpdateGraph(parameters, {}, 0.0f, true, true, {DType::kBFloat16}).ok());
}

}  // namespace
}  // namespace onnx_amp
