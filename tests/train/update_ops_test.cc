// The optimizer-step ops (UnscaleAndCheck, GlobalNormClip, SgdUpdate, AdamUpdate,
// AdamWUpdate, RmspropUpdate) run by the executor, against optimizer_math.h and
// gradient_math.h applied element by element: bit-identical, since both sides round the
// same float32 operations. A set skip flag must hand back the very inputs. The update
// graph built for the trainer passes the ONNX checker and runs end to end. (The weight
// copies the update ops may also write: weight_copy_update_test.cc.)
#include <gtest/gtest.h>
#include <onnx/checker.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ops/onnx_amp_schemas.h"
#include "ops/training/gradient_math.h"
#include "ops/training/optimizer_math.h"
#include "runtime/executor/executor.h"
#include "runtime/train/update_graph.h"
#include "tests/train/update_op_runner.h"

namespace onnx_amp {
namespace {

using namespace testing;  // update_op_runner.h

TEST(UpdateOps, SgdMatchesOptimizerMathPlainMomentumAndNesterov) {
  const Tensor w = Random(1, -1.0f, 1.0f);
  const Tensor g = Random(2, -3.0f, 3.0f);
  const Tensor velocity = Random(3, -0.1f, 0.1f);
  const float lr = 0.01f;
  const std::pair<float, bool> kCases[] = {{0.0f, false}, {0.9f, false}, {0.9f, true}};
  for (const auto& [momentum, nesterov] : kCases) {
    const bool has_velocity = momentum != 0.0f;
    std::vector<float> expected_w = Values(w);
    std::vector<float> expected_v = Values(velocity);
    for (int64_t i = 0; i < kCount; ++i) {
      SgdUpdate(expected_w[i], expected_v[i], g.data<float>()[i], lr, momentum, nesterov);
    }
    std::vector<std::pair<std::string, Tensor>> inputs = {
        {"w", w}, {"g", g}, {has_velocity ? "v" : "", velocity}, {"lr", Scalar(lr)}, {"skip", Scalar(false)}};
    std::vector<std::string> outputs = {"w_new"};
    if (has_velocity) outputs.push_back("v_new");
    Expected<RunResult> run =
        RunNode("SgdUpdate", inputs, outputs, {Float("momentum", momentum), Int("nesterov", nesterov)});
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(BitIdentical(expected_w, run->outputs[0].tensor))
        << "momentum " << momentum << " nesterov " << nesterov;
    if (has_velocity) {
      EXPECT_TRUE(BitIdentical(expected_v, run->outputs[1].tensor));
    }
  }
}

TEST(UpdateOps, AdamAndAdamWMatchOptimizerMath) {
  const Tensor w = Random(4, -1.0f, 1.0f);
  const Tensor g = Random(5, -3.0f, 3.0f);
  const Tensor m = Random(6, -0.5f, 0.5f);
  const Tensor v = Random(7, 0.0f, 2.0f);
  const float lr = 0.001f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f, weight_decay = 0.004f;
  const int64_t step = 41;  // the 42nd update: alpha's bias correction is far from 1
  for (const bool decoupled : {false, true}) {
    const float alpha = AdamStepSize(lr, beta1, beta2, step);
    const float decay_step = decoupled ? lr * weight_decay : 0.0f;
    std::vector<float> ew = Values(w), em = Values(m), ev = Values(v);
    for (int64_t i = 0; i < kCount; ++i) {
      AdamUpdate(ew[i], em[i], ev[i], g.data<float>()[i], alpha, beta1, beta2, epsilon, decay_step);
    }
    std::vector<Attribute> attributes = {Float("beta1", beta1), Float("beta2", beta2), Float("epsilon", epsilon)};
    if (decoupled) attributes.push_back(Float("weight_decay", weight_decay));
    Expected<RunResult> run = RunNode(decoupled ? "AdamWUpdate" : "AdamUpdate",
                                      {{"w", w},
                                       {"g", g},
                                       {"m", m},
                                       {"v", v},
                                       {"lr", Scalar(lr)},
                                       {"step", Scalar<int64_t>(step)},
                                       {"skip", Scalar(false)}},
                                      {"w_new", "m_new", "v_new"}, attributes);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(BitIdentical(ew, run->outputs[0].tensor)) << (decoupled ? "AdamW" : "Adam");
    EXPECT_TRUE(BitIdentical(em, run->outputs[1].tensor));
    EXPECT_TRUE(BitIdentical(ev, run->outputs[2].tensor));
  }
}

TEST(UpdateOps, AdamStepSizeIsTheKerasBiasCorrection) {
  // Step 0 is t = 1: lr * sqrt(1 - beta2) / (1 - beta1), in double, rounded once.
  const double expected = 0.001 * std::sqrt(1.0 - static_cast<double>(0.999f)) / (1.0 - static_cast<double>(0.9f));
  EXPECT_EQ(AdamStepSize(0.001f, 0.9f, 0.999f, 0), static_cast<float>(expected));
}

TEST(UpdateOps, RmspropMatchesOptimizerMath) {
  const Tensor w = Random(8, -1.0f, 1.0f);
  const Tensor g = Random(9, -3.0f, 3.0f);
  const Tensor v = Random(10, 0.0f, 2.0f);
  const float lr = 0.001f, rho = 0.9f, epsilon = 1e-7f;
  std::vector<float> ew = Values(w), ev = Values(v);
  for (int64_t i = 0; i < kCount; ++i) RmspropUpdate(ew[i], ev[i], g.data<float>()[i], lr, rho, epsilon);
  Expected<RunResult> run =
      RunNode("RmspropUpdate", {{"w", w}, {"g", g}, {"v", v}, {"lr", Scalar(lr)}, {"skip", Scalar(false)}},
              {"w_new", "v_new"}, {Float("rho", rho), Float("epsilon", epsilon)});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(BitIdentical(ew, run->outputs[0].tensor));
  EXPECT_TRUE(BitIdentical(ev, run->outputs[1].tensor));
}

TEST(UpdateOps, SkipHandsBackTheInputsBitForBit) {
  const Tensor w = Random(11, -1.0f, 1.0f);
  Tensor g = Random(12, -3.0f, 3.0f);
  g.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();  // what a skipped step carries
  const Tensor m = Random(13, -0.5f, 0.5f);
  const Tensor v = Random(14, 0.0f, 2.0f);
  struct Case {
    std::string op;
    std::vector<std::pair<std::string, Tensor>> inputs;
    std::vector<std::string> outputs;
    std::vector<const Tensor*> expected;
  };
  const std::vector<Case> cases = {
      {"SgdUpdate",
       {{"w", w}, {"g", g}, {"v", v}, {"lr", Scalar(0.01f)}, {"skip", Scalar(true)}},
       {"w2", "v2"},
       {&w, &v}},
      {"AdamUpdate",
       {{"w", w},
        {"g", g},
        {"m", m},
        {"v", v},
        {"lr", Scalar(0.001f)},
        {"step", Scalar<int64_t>(3)},
        {"skip", Scalar(true)}},
       {"w2", "m2", "v2"},
       {&w, &m, &v}},
      {"AdamWUpdate",
       {{"w", w},
        {"g", g},
        {"m", m},
        {"v", v},
        {"lr", Scalar(0.001f)},
        {"step", Scalar<int64_t>(3)},
        {"skip", Scalar(true)}},
       {"w2", "m2", "v2"},
       {&w, &m, &v}},
      {"RmspropUpdate",
       {{"w", w}, {"g", g}, {"v", v}, {"lr", Scalar(0.001f)}, {"skip", Scalar(true)}},
       {"w2", "v2"},
       {&w, &v}},
  };
  for (const Case& c : cases) {
    const std::vector<Attribute> attributes =
        c.op == "SgdUpdate" ? std::vector<Attribute>{Float("momentum", 0.9f)} : std::vector<Attribute>{};
    Expected<RunResult> run = RunNode(c.op, c.inputs, c.outputs, attributes);
    ASSERT_TRUE(run.ok()) << c.op << ": " << run.status().message();
    for (size_t k = 0; k < c.expected.size(); ++k) {
      EXPECT_TRUE(BitIdentical(Values(*c.expected[k]), run->outputs[k].tensor)) << c.op << " output " << k;
      // The very buffer: nothing was copied or rewritten.
      EXPECT_EQ(run->outputs[k].tensor.raw_data(), c.expected[k]->raw_data()) << c.op << " output " << k;
    }
  }
}

TEST(UpdateOps, UnscaleAndCheckNamesTheFirstNonFiniteGradient) {
  const Tensor a = Random(15, -60000.0f, 60000.0f);
  Tensor b = Random(16, -60000.0f, 60000.0f, 7);
  Tensor c = Random(17, -60000.0f, 60000.0f, 3);
  b.data<float>()[6] = std::numeric_limits<float>::infinity();
  c.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  const float scale = 1024.0f;
  Expected<RunResult> run = RunNode("UnscaleAndCheck", {{"scale", Scalar(scale)}, {"a", a}, {"b", b}, {"c", c}},
                                    {"found_inf", "first", "a2", "b2", "c2"}, {});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(*run->outputs[0].tensor.data<bool>());
  EXPECT_EQ(*run->outputs[1].tensor.data<int64_t>(), 1);  // b, not c
  // 1/1024 is exact: each value is divided by 1024 exactly.
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    ASSERT_EQ(run->outputs[2].tensor.data<float>()[i], a.data<float>()[i] / 1024.0f) << i;
  }
  EXPECT_EQ(run->outputs[3].tensor.data<float>()[6], std::numeric_limits<float>::infinity());

  // All finite, scale 1 (float32 and bfloat16 training): checked only, the same buffers.
  Expected<RunResult> finite =
      RunNode("UnscaleAndCheck", {{"scale", Scalar(1.0f)}, {"a", a}}, {"found_inf", "first", "a2"}, {});
  ASSERT_TRUE(finite.ok()) << finite.status().message();
  EXPECT_FALSE(*finite->outputs[0].tensor.data<bool>());
  EXPECT_EQ(*finite->outputs[1].tensor.data<int64_t>(), -1);
  EXPECT_EQ(finite->outputs[2].tensor.raw_data(), a.raw_data());

  // A non-power-of-two scale uses 1/scale rounded once, as the loss scaler does.
  const float odd = 3.0f;
  Expected<RunResult> thirds =
      RunNode("UnscaleAndCheck", {{"scale", Scalar(odd)}, {"a", a}}, {"found_inf", "first", "a2"}, {});
  ASSERT_TRUE(thirds.ok()) << thirds.status().message();
  const float inv = static_cast<float>(1.0 / 3.0);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    ASSERT_EQ(thirds->outputs[2].tensor.data<float>()[i], a.data<float>()[i] * inv) << i;
  }
}

// The check reads every bit pattern's exponent as std::isfinite does: all exponents,
// both signs, mantissas from empty to full (quiet and signalling NaNs, payloads).
TEST(UpdateOps, NonFiniteBitAgreesWithIsfinite) {
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t exponent = 0; exponent < 256; ++exponent) {
      for (uint32_t mantissa : {0u, 1u, 0x1234u, 0x3FFFFFu, 0x400000u, 0x400001u, 0x7FFFFFu}) {
        const float value = std::bit_cast<float>(sign | exponent << 23 | mantissa);
        ASSERT_EQ(AnyNonFinite(NonFiniteBit(value)), !std::isfinite(value)) << sign << " " << exponent << " " << mantissa;
        ASSERT_EQ(IsNonFinite(value), !std::isfinite(value));
      }
    }
  }
}

// One inf or NaN anywhere in a gradient is found, on the check-only path (scale 1), the
// unscaling one and in place: at either end, at either side of a worker's chunk and in a
// vector loop's remainder. The largest finite values and subnormals are not flagged.
TEST(UpdateOps, UnscaleAndCheckFindsOneNonFiniteValueAnywhere) {
  constexpr int64_t kElements = 3 * 32768 + 13;
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::signaling_NaN(), std::bit_cast<float>(0x7F800001u)};
  const float extremes[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), -0.0f};
  const int64_t positions[] = {0, 5, 32767, 32768, 65537, kElements - 1};
  for (const float scale : {1.0f, 1024.0f}) {
    for (const bool in_place : {false, true}) {
      for (const int64_t position : positions) {
        for (const float special : specials) {
          Tensor g = Random(21, -1.0f, 1.0f, kElements);
          g.data<float>()[position] = special;
          Expected<RunResult> run = RunNode("UnscaleAndCheck", {{"scale", Scalar(scale)}, {"g", g}},
                                            {"found_inf", "first", "g2"}, {Int("in_place", in_place)});
          ASSERT_TRUE(run.ok()) << run.status().message();
          ASSERT_TRUE(*run->outputs[0].tensor.data<bool>()) << scale << " " << in_place << " " << position;
          ASSERT_EQ(*run->outputs[1].tensor.data<int64_t>(), 0);
        }
        Tensor g = Random(22, -1.0f, 1.0f, kElements);
        for (size_t k = 0; k < std::size(extremes); ++k) g.data<float>()[(position + k) % kElements] = extremes[k];
        Expected<RunResult> run = RunNode("UnscaleAndCheck", {{"scale", Scalar(scale)}, {"g", g}},
                                          {"found_inf", "first", "g2"}, {Int("in_place", in_place)});
        ASSERT_TRUE(run.ok()) << run.status().message();
        ASSERT_FALSE(*run->outputs[0].tensor.data<bool>()) << scale << " " << in_place << " " << position;
        ASSERT_EQ(*run->outputs[1].tensor.data<int64_t>(), -1);
      }
    }
  }
}

// With in_place the gradients fed in are unscaled where they are and come back as the
// outputs: the same numbers as fresh outputs, no new buffers.
TEST(UpdateOps, UnscaleAndCheckInPlaceWritesTheGradientsFedIn) {
  const Tensor original = Random(18, -60000.0f, 60000.0f);
  Tensor a = Tensor::Empty(DType::kFloat32, original.shape());
  std::memcpy(a.raw_data(), original.raw_data(), original.bytes());
  Expected<RunResult> run = RunNode("UnscaleAndCheck", {{"scale", Scalar(3.0f)}, {"a", a}},
                                    {"found_inf", "first", "a2"}, {Int("in_place", 1)});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_FALSE(*run->outputs[0].tensor.data<bool>());
  EXPECT_EQ(run->outputs[2].tensor.raw_data(), a.raw_data());
  const float inv = static_cast<float>(1.0 / 3.0);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    ASSERT_EQ(a.data<float>()[i], original.data<float>()[i] * inv) << i;
  }
}

TEST(UpdateOps, GlobalNormClipTakesTheMeanThenClips) {
  Tensor a = Tensor::Empty(DType::kFloat32, {1});
  Tensor b = Tensor::Empty(DType::kFloat32, {1});
  a.data<float>()[0] = 6.0f;
  b.data<float>()[0] = 8.0f;
  // Sums over 2 micro-batches: mean (3, 4), norm 5; clipped to 1: (0.6, 0.8), each
  // computed in double and rounded once.
  Expected<RunResult> run = RunNode("GlobalNormClip", {{"n", Scalar<int64_t>(2)}, {"a", a}, {"b", b}}, {"a2", "b2"},
                                    {Float("max_norm", 1.0f)});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->outputs[0].tensor.data<float>()[0], static_cast<float>(6.0 * (0.5 * (1.0 / 5.0))));
  EXPECT_EQ(run->outputs[1].tensor.data<float>()[0], static_cast<float>(8.0 * (0.5 * (1.0 / 5.0))));
  EXPECT_NEAR(run->outputs[0].tensor.data<float>()[0], 0.6f, 1e-7f);

  // Under the limit: only the mean.
  Expected<RunResult> mean = RunNode("GlobalNormClip", {{"n", Scalar<int64_t>(2)}, {"a", a}, {"b", b}}, {"a2", "b2"},
                                     {Float("max_norm", 10.0f)});
  ASSERT_TRUE(mean.ok()) << mean.status().message();
  EXPECT_EQ(mean->outputs[0].tensor.data<float>()[0], 3.0f);
  EXPECT_EQ(mean->outputs[1].tensor.data<float>()[0], 4.0f);

  // One micro-batch, no clipping: the same buffers.
  Expected<RunResult> same = RunNode("GlobalNormClip", {{"n", Scalar<int64_t>(1)}, {"a", a}}, {"a2"}, {});
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->outputs[0].tensor.raw_data(), a.raw_data());
}

TEST(UpdateOps, BadInputsAreErrorsNotCrashes) {
  const Tensor w = Random(18, -1.0f, 1.0f);
  const Tensor short_g = Random(19, -1.0f, 1.0f, 10);
  Expected<RunResult> shape =
      RunNode("RmspropUpdate", {{"w", w}, {"g", short_g}, {"v", w}, {"lr", Scalar(0.1f)}, {"skip", Scalar(false)}},
              {"w2", "v2"}, {});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("differ in shape"), std::string::npos) << shape.status().message();
  Expected<RunResult> momentum =
      RunNode("SgdUpdate", {{"w", w}, {"g", w}, {"", w}, {"lr", Scalar(0.1f)}, {"skip", Scalar(false)}}, {"w2"},
              {Float("momentum", 0.9f)});
  ASSERT_FALSE(momentum.ok());
  EXPECT_NE(momentum.status().message().find("velocity"), std::string::npos) << momentum.status().message();
  Expected<RunResult> count = RunNode("GlobalNormClip", {{"n", Scalar<int64_t>(0)}, {"a", w}}, {"a2"}, {});
  ASSERT_FALSE(count.ok());
}

// The trainer's update graph: valid ONNX, and one Adam step with loss scale 2^10 over two
// micro-batches and clipping equals gradient_math.h + optimizer_math.h by hand.
TEST(UpdateGraph, PassesTheCheckerAndRunsOneAdamStep) {
  RegisterOnnxAmpOpSchemas();
  const std::vector<NamedTensor> parameters = {{"w", Random(20, -1.0f, 1.0f)}, {"b", Random(21, -1.0f, 1.0f, 5)}};
  OptimizerConfig optimizer;
  optimizer.kind = OptimizerKind::kAdam;
  const float clip_norm = 0.5f;
  Expected<UpdateGraph> update = BuildUpdateGraph(parameters, optimizer, clip_norm);
  ASSERT_TRUE(update.ok()) << update.status().message();
  try {
    onnx::checker::check_model(update->model, /*full_check=*/true);
  } catch (const std::exception& error) {
    FAIL() << error.what();
  }

  const float scale = 1024.0f, lr = 0.001f;
  const int64_t micro_batches = 2, step = 5;
  std::vector<Tensor> gradients = {Random(22, -2000.0f, 2000.0f), Random(23, -2000.0f, 2000.0f, 5)};
  std::vector<Tensor> m = {Random(24, -0.1f, 0.1f), Random(25, -0.1f, 0.1f, 5)};
  std::vector<Tensor> v = {Random(26, 0.0f, 0.1f), Random(27, 0.0f, 0.1f, 5)};
  std::map<std::string, Tensor> feeds = {{kUpdateScale, Scalar(scale)},
                                         {kUpdateMicroBatches, Scalar(micro_batches)},
                                         {kUpdateLoss, Scalar(2.5f)},
                                         {kUpdateLearningRate, Scalar(lr)},
                                         {kUpdateStep, Scalar(step)}};
  for (size_t p = 0; p < parameters.size(); ++p) {
    feeds[update->gradient_inputs[p]] = gradients[p];
    feeds[parameters[p].name] = parameters[p].tensor;
    feeds[update->slot_inputs[0][p]] = m[p];
    feeds[update->slot_inputs[1][p]] = v[p];
  }
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(update->model);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  Expected<RunResult> run = (*executor)->Run(feeds);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->outputs.size(), 2u + 2u * 3u);
  EXPECT_FALSE(*run->outputs[0].tensor.data<bool>());
  EXPECT_EQ(*run->outputs[1].tensor.data<int64_t>(), -1);

  // By hand: unscale, the double sum of squares in parameter order, one factor.
  const float inv = InverseLossScale(scale);
  std::vector<std::vector<float>> unscaled;
  double squares = 0.0;
  for (const Tensor& g : gradients) {
    unscaled.push_back(Values(g));
    for (float& x : unscaled.back()) {
      x *= inv;
      squares += static_cast<double>(x) * x;
    }
  }
  const double factor = MeanClipFactor(squares, micro_batches, clip_norm);
  ASSERT_LT(factor, 0.5);  // the clip acts
  const float alpha = AdamStepSize(lr, optimizer.beta1, optimizer.beta2, step);
  for (size_t p = 0; p < parameters.size(); ++p) {
    std::vector<float> ew = Values(parameters[p].tensor), em = Values(m[p]), ev = Values(v[p]);
    for (size_t i = 0; i < ew.size(); ++i) {
      const float g = static_cast<float>(unscaled[p][i] * factor);
      AdamUpdate(ew[i], em[i], ev[i], g, alpha, optimizer.beta1, optimizer.beta2, optimizer.epsilon, 0.0f);
    }
    EXPECT_TRUE(BitIdentical(ew, run->outputs[2 + 3 * p].tensor)) << parameters[p].name;
    EXPECT_TRUE(BitIdentical(em, run->outputs[3 + 3 * p].tensor)) << parameters[p].name;
    EXPECT_TRUE(BitIdentical(ev, run->outputs[4 + 3 * p].tensor)) << parameters[p].name;
  }

  // A non-finite loss with finite gradients skips the step: the inputs come back.
  feeds[kUpdateLoss] = Scalar(std::numeric_limits<float>::infinity());
  Expected<RunResult> skipped = (*executor)->Run(feeds);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_TRUE(*skipped->outputs[0].tensor.data<bool>());
  EXPECT_EQ(*skipped->outputs[1].tensor.data<int64_t>(), -1);
  EXPECT_EQ(skipped->outputs[2].tensor.raw_data(), parameters[0].tensor.raw_data());
  EXPECT_EQ(skipped->outputs[3].tensor.raw_data(), m[0].raw_data());
}

// Without loss scaling the unscale node is marked so that a kernel reading the scale on
// the device (CUDA) still knows to check only; the graph stays valid ONNX either way.
TEST(UpdateGraph, MarksTheUnscaleNodeWhenLossScalingIsOff) {
  const std::vector<NamedTensor> one = {{"w", Random(31, -1.0f, 1.0f, 2)}};
  for (const bool scaled : {true, false}) {
    Expected<UpdateGraph> update = BuildUpdateGraph(one, {}, 0.0f, /*in_place=*/true, scaled);
    ASSERT_TRUE(update.ok()) << update.status().message();
    RegisterOnnxAmpOpSchemas();
    try {
      onnx::checker::check_model(update->model, /*full_check=*/true);
    } catch (const std::exception& error) {
      FAIL() << error.what();
    }
    bool found = false;
    for (const onnx::NodeProto& node : update->model.graph().node()) {
      if (node.op_type() != "UnscaleAndCheck") continue;
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        if (attribute.name() != "scaled") continue;
        EXPECT_EQ(attribute.i(), scaled ? 1 : 0);
        found = true;
      }
    }
    EXPECT_TRUE(found);
  }
}

TEST(UpdateGraph, RejectsCollidingNamesAndBadClipNorms) {
  const std::vector<NamedTensor> colliding = {{"w", Random(28, -1.0f, 1.0f, 2)},
                                              {"w_grad", Random(29, -1.0f, 1.0f, 2)}};
  EXPECT_EQ(BuildUpdateGraph(colliding, {}, 0.0f).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<NamedTensor> one = {{"w", Random(30, -1.0f, 1.0f, 2)}};
  EXPECT_EQ(BuildUpdateGraph(one, {}, -1.0f).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(BuildUpdateGraph({}, {}, 0.0f).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnx_amp
