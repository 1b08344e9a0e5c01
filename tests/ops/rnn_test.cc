// RNN / GRU / LSTM kernels (their ONNX backend node tests run in backend_node_test.cc):
// a straightforward double-precision reference written here (directions, sequence_lens, layout 1,
// initial states, peepholes, linear_before_reset, input_forget, clip, activations),
// and float16/bfloat16 against the float32 kernel run on the same rounded inputs.
//
// Bounds. The data keep every cell a mild map of its carried state: R's rows have
// |R| sums <= rho = 1/8 and |P| <= rho, so with sigmoid' <= 1/4, tanh' <= 1, gates in
// (0, 1), |H| <= 1 and |C| <= 2 (checked), an error e in (H, C) becomes at most L e
// after a step with L = 1 + 4 rho = 1.5. An error made at each step therefore sums, after k
// steps, to at most sum_{j<k} L^j = G(k) times the per-step error.
// - float32 against double: a gate pre-activation is a float32 sum of I + H + 2 terms
//   bounded by A = I/2 + 3/2 in magnitude ((I + H + 2) u32 A), the activations and the
//   gate products add a few u32; we allow 4 (I + H + 8) A u32 per step.
// - float16/bfloat16 against float32 on the rounded inputs: the low kernel rounds the
//   carried H (and C) once per step (u_low (|H| + |C|)); both run the same float32
//   arithmetic otherwise, so |low - f32| <= u_low (1 + max|C|) G(k). With a single step
//   nothing is carried and the low outputs are exactly the float32 outputs rounded once;
//   stepping the float32 kernel with rounded states fed back reproduces them exactly.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/float16.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

constexpr double kRho = 0.125;
constexpr double kLipschitz = 1.0 + 4.0 * kRho;

// sum_{j<k} L^j: how k per-step errors add up through the recurrence.
double Growth(int64_t k) {
  double sum = 0.0, power = 1.0;
  for (int64_t j = 0; j < k; ++j, power *= kLipschitz) sum += power;
  return sum;
}

struct RecurrentCase {
  std::string op;  // RNN, GRU or LSTM
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t linear_before_reset = 0;
  int64_t input_forget = 0;
  float clip = 0.0f;  // 0: attribute absent
  std::vector<std::string> activations;  // empty: the op's defaults
  std::vector<float> alphas, betas;
  std::vector<int32_t> lengths;  // empty: sequence_lens absent
  bool with_bias = true;
  bool with_initial = true;
  bool with_peephole = true;  // LSTM only
};

RecurrentCase CaseFor(const std::string& op) {
  RecurrentCase c;
  c.op = op;
  return c;
}

int64_t Gates(const RecurrentCase& c) { return c.op == "RNN" ? 1 : c.op == "GRU" ? 3 : 4; }
int64_t Directions(const RecurrentCase& c) { return c.direction == "bidirectional" ? 2 : 1; }
bool IsLstm(const RecurrentCase& c) { return c.op == "LSTM"; }

struct CaseData {
  RoundedTensor x, w, r, b, h0, c0, p;
};

CaseData MakeData(const RecurrentCase& c, DType dtype, uint32_t seed) {
  const int64_t d = Directions(c), n = Gates(c) * c.hidden;
  const Shape x_shape = c.layout == 1 ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const Shape state_shape = c.layout == 1 ? Shape{c.batch, d, c.hidden} : Shape{d, c.batch, c.hidden};
  const double r_range = kRho / static_cast<double>(c.hidden);
  CaseData data;
  data.x = RandomTensor(dtype, x_shape, seed, -1.0, 1.0);
  data.w = RandomTensor(dtype, {d, n, c.input}, seed + 1, -0.5, 0.5);
  data.r = RandomTensor(dtype, {d, n, c.hidden}, seed + 2, -r_range, r_range);
  if (c.with_bias) data.b = RandomTensor(dtype, {d, 2 * n}, seed + 3, -0.25, 0.25);
  if (c.with_initial) data.h0 = RandomTensor(dtype, state_shape, seed + 4, -0.5, 0.5);
  if (c.with_initial && IsLstm(c)) data.c0 = RandomTensor(dtype, state_shape, seed + 5, -1.0, 1.0);
  if (c.with_peephole && IsLstm(c)) data.p = RandomTensor(dtype, {d, 3 * c.hidden}, seed + 6, -kRho, kRho);
  return data;
}

Expected<std::vector<Tensor>> RunCase(const RecurrentCase& c, const CaseData& data) {
  SingleNode node(c.op, 14);
  node.Attr("hidden_size", c.hidden).Attr("direction", c.direction);
  if (c.layout != 0) node.Attr("layout", c.layout);
  if (c.op == "GRU") node.Attr("linear_before_reset", c.linear_before_reset);
  if (IsLstm(c)) node.Attr("input_forget", c.input_forget);
  if (c.clip > 0.0f) node.Attr("clip", c.clip);
  if (!c.alphas.empty()) node.Attr("activation_alpha", c.alphas);
  if (!c.betas.empty()) node.Attr("activation_beta", c.betas);
  if (!c.activations.empty()) {
    onnx::AttributeProto* attr = node.node().add_attribute();
    attr->set_name("activations");
    attr->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& name : c.activations) attr->add_strings(name);
  }
  Tensor lengths;
  if (!c.lengths.empty()) lengths = MakeTensor<int32_t>({c.batch}, c.lengths);
  node.Input(data.x.tensor).Input(data.w.tensor).Input(data.r.tensor).Input(data.b.tensor).Input(lengths);
  node.Input(data.h0.tensor);
  if (IsLstm(c)) node.Input(data.c0.tensor).Input(data.p.tensor);
  node.NumOutputs(IsLstm(c) ? 3 : 2);
  return node.Run();
}

// ---- the double-precision reference: the ONNX equations, one batch entry and one
// timestep at a time ----

using Activation = std::function<double(double)>;

std::vector<Activation> ReferenceActivations(const RecurrentCase& c) {
  std::vector<std::string> names = c.activations;
  if (names.empty()) {
    const std::vector<std::string> defaults = c.op == "RNN"   ? std::vector<std::string>{"Tanh"}
                                              : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                              : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < Directions(c); ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  size_t next_alpha = 0, next_beta = 0;
  auto alpha = [&](double fallback) { return next_alpha < c.alphas.size() ? double{c.alphas[next_alpha++]} : fallback; };
  auto beta = [&](double fallback) { return next_beta < c.betas.size() ? double{c.betas[next_beta++]} : fallback; };
  std::vector<Activation> out;
  for (const std::string& name : names) {
    if (name == "Tanh") {
      out.push_back([](double x) { return std::tanh(x); });
    } else if (name == "Sigmoid") {
      out.push_back([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    } else if (name == "Relu") {
      out.push_back([](double x) { return std::max(x, 0.0); });
    } else if (name == "LeakyRelu") {
      const double a = alpha(0.01);
      out.push_back([a](double x) { return x >= 0 ? x : a * x; });
    } else if (name == "ThresholdedRelu") {
      const double a = alpha(1.0);
      out.push_back([a](double x) { return x >= a ? x : 0.0; });
    } else if (name == "HardSigmoid") {
      const double a = alpha(0.2), b = beta(0.5);
      out.push_back([a, b](double x) { return std::clamp(a * x + b, 0.0, 1.0); });
    } else if (name == "ScaledTanh") {
      const double a = alpha(1.0), b = beta(1.0);
      out.push_back([a, b](double x) { return a * std::tanh(b * x); });
    } else if (name == "Affine") {
      const double a = alpha(1.0), b = beta(0.0);
      out.push_back([a, b](double x) { return a * x + b; });
    } else if (name == "Elu") {
      const double a = alpha(1.0);
      out.push_back([a](double x) { return x >= 0 ? x : a * (std::exp(x) - 1.0); });
    } else if (name == "Softsign") {
      out.push_back([](double x) { return x / (1.0 + std::fabs(x)); });
    } else if (name == "Softplus") {
      out.push_back([](double x) { return std::log1p(std::exp(x)); });
    } else {
      ADD_FAILURE() << "reference has no activation " << name;
      out.push_back([](double x) { return x; });
    }
  }
  return out;
}

struct Outputs {
  std::vector<double> y, y_h, y_c;
  std::vector<double> y_steps;  // per Y element: steps taken up to it (0 where Y is padding)
  std::vector<double> state_steps;  // per Y_h / Y_c element
  double max_cell = 0.0;  // max |C| over all steps (LSTM)
};

Outputs Reference(const RecurrentCase& c, const CaseData& data) {
  const int64_t dirs = Directions(c), g = Gates(c), h = c.hidden, n = g * h, in = c.input;
  const bool batch_major = c.layout == 1;
  auto x_at = [&](int64_t t, int64_t b, int64_t i) {
    return data.x.values[(batch_major ? (b * c.seq + t) : (t * c.batch + b)) * in + i];
  };
  auto state_index = [&](int64_t d, int64_t b, int64_t j) {
    return (batch_major ? (b * dirs + d) : (d * c.batch + b)) * h + j;
  };
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return (batch_major ? ((b * c.seq + t) * dirs + d) : ((t * dirs + d) * c.batch + b)) * h + j;
  };
  const std::vector<Activation> acts = ReferenceActivations(c);
  const size_t per_dir = acts.size() / static_cast<size_t>(dirs);
  Outputs out;
  out.y.assign(static_cast<size_t>(c.seq * dirs * c.batch * h), 0.0);
  out.y_steps = out.y;
  out.y_h.assign(static_cast<size_t>(dirs * c.batch * h), 0.0);
  out.y_c = out.y_h;
  out.state_steps = out.y_h;
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -double{c.clip}, double{c.clip}) : v; };
  for (int64_t d = 0; d < dirs; ++d) {
    const Activation& f = acts[d * per_dir];
    const Activation& gact = per_dir > 1 ? acts[d * per_dir + 1] : f;
    const Activation& hact = per_dir > 2 ? acts[d * per_dir + 2] : f;
    auto w = [&](int64_t row, int64_t i) { return data.w.values[(d * n + row) * in + i]; };
    auto r = [&](int64_t row, int64_t j) { return data.r.values[(d * n + row) * h + j]; };
    auto wb = [&](int64_t row) { return c.with_bias ? data.b.values[d * 2 * n + row] : 0.0; };
    auto rb = [&](int64_t row) { return c.with_bias ? data.b.values[d * 2 * n + n + row] : 0.0; };
    auto peep = [&](int64_t k, int64_t j) { return c.with_peephole && IsLstm(c) ? data.p.values[d * 3 * h + k * h + j] : 0.0; };
    const bool backwards = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t length = c.lengths.empty() ? c.seq : c.lengths[b];
      std::vector<double> hs(h, 0.0), cs(h, 0.0);
      for (int64_t j = 0; j < h && c.with_initial; ++j) {
        hs[j] = data.h0.values[state_index(d, b, j)];
        if (IsLstm(c)) cs[j] = data.c0.values[state_index(d, b, j)];
      }
      for (int64_t k = 0; k < length; ++k) {
        const int64_t t = backwards ? length - 1 - k : k;
        // xw[row] = x_t . W[row] + Wb[row]; hr[row] = H . R[row] + Rb[row].
        std::vector<double> xw(n), hr(n);
        for (int64_t row = 0; row < n; ++row) {
          xw[row] = wb(row);
          hr[row] = rb(row);
          for (int64_t i = 0; i < in; ++i) xw[row] += x_at(t, b, i) * w(row, i);
          for (int64_t j = 0; j < h; ++j) hr[row] += hs[j] * r(row, j);
        }
        std::vector<double> next_h(h), next_c(h);
        if (c.op == "RNN") {
          for (int64_t j = 0; j < h; ++j) next_h[j] = f(clip(xw[j] + hr[j]));
        } else if (c.op == "GRU") {
          std::vector<double> z(h), rr(h);
          for (int64_t j = 0; j < h; ++j) {
            z[j] = f(clip(xw[j] + hr[j]));
            rr[j] = f(clip(xw[h + j] + hr[h + j]));
          }
          for (int64_t j = 0; j < h; ++j) {
            double pre;
            if (c.linear_before_reset) {
              pre = xw[2 * h + j] + rr[j] * hr[2 * h + j];
            } else {
              pre = xw[2 * h + j] + rb(2 * h + j);
              for (int64_t q = 0; q < h; ++q) pre += rr[q] * hs[q] * r(2 * h + j, q);
            }
            next_h[j] = (1 - z[j]) * gact(clip(pre)) + z[j] * hs[j];
          }
        } else {
          for (int64_t j = 0; j < h; ++j) {
            const double i_gate = f(clip(xw[j] + hr[j] + peep(0, j) * cs[j]));
            const double f_gate = c.input_forget ? 1 - i_gate : f(clip(xw[2 * h + j] + hr[2 * h + j] + peep(2, j) * cs[j]));
            const double cand = gact(clip(xw[3 * h + j] + hr[3 * h + j]));
            next_c[j] = f_gate * cs[j] + i_gate * cand;
            const double o_gate = f(clip(xw[h + j] + hr[h + j] + peep(1, j) * next_c[j]));
            next_h[j] = o_gate * hact(next_c[j]);
          }
        }
        hs = next_h;
        cs = next_c;
        for (double v : cs) out.max_cell = std::max(out.max_cell, std::fabs(v));
        for (int64_t j = 0; j < h; ++j) {
          out.y[y_index(t, d, b, j)] = hs[j];
          out.y_steps[y_index(t, d, b, j)] = static_cast<double>(k + 1);
        }
      }
      for (int64_t j = 0; j < h && length > 0; ++j) {
        out.y_h[state_index(d, b, j)] = hs[j];
        out.y_c[state_index(d, b, j)] = cs[j];
        out.state_steps[state_index(d, b, j)] = static_cast<double>(length);
      }
    }
  }
  return out;
}

std::vector<double> Float32Bound(const RecurrentCase& c, const std::vector<double>& steps) {
  const double a = static_cast<double>(c.input) / 2 + 1.5;
  const double per_step = 4.0 * static_cast<double>(c.input + c.hidden + 8) * a * kUnitF32;
  std::vector<double> bound(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) bound[i] = per_step * Growth(static_cast<int64_t>(steps[i]));
  return bound;
}

void ExpectMatchesReference(const RecurrentCase& c, uint32_t seed) {
  const CaseData data = MakeData(c, DType::kFloat32, seed);
  Expected<std::vector<Tensor>> out = RunCase(c, data);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const Outputs ref = Reference(c, data);
  const int64_t dirs = Directions(c);
  const Shape y_shape = c.layout == 1 ? Shape{c.batch, c.seq, dirs, c.hidden} : Shape{c.seq, dirs, c.batch, c.hidden};
  const Shape state_shape = c.layout == 1 ? Shape{c.batch, dirs, c.hidden} : Shape{dirs, c.batch, c.hidden};
  ASSERT_EQ((*out)[0].shape(), y_shape);
  ASSERT_EQ((*out)[1].shape(), state_shape);
  ExpectWithin(ToDoubles((*out)[0]), ref.y, Float32Bound(c, ref.y_steps), c.op + " Y");
  ExpectWithin(ToDoubles((*out)[1]), ref.y_h, Float32Bound(c, ref.state_steps), c.op + " Y_h");
  if (IsLstm(c)) {
    ASSERT_EQ((*out)[2].shape(), state_shape);
    ExpectWithin(ToDoubles((*out)[2]), ref.y_c, Float32Bound(c, ref.state_steps), c.op + " Y_c");
  }
}

// ---- against the double reference ----

TEST(RecurrentReferenceTest, BidirectionalWithSequenceLengths) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    c.seq = 5;
    c.batch = 3;
    c.direction = "bidirectional";
    c.lengths = {5, 2, 0};
    ExpectMatchesReference(c, 11);
  }
}

TEST(RecurrentReferenceTest, BatchMajorLayout) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    c.layout = 1;
    c.direction = "bidirectional";
    c.lengths = {3, 1};
    ExpectMatchesReference(c, 21);
  }
}

TEST(RecurrentReferenceTest, ReverseWithoutOptionalInputs) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    c.direction = "reverse";
    c.with_bias = c.with_initial = c.with_peephole = false;
    ExpectMatchesReference(c, 31);
  }
}

TEST(RecurrentReferenceTest, GruLinearBeforeReset) {
  RecurrentCase c = CaseFor("GRU");
  c.linear_before_reset = 1;
  c.direction = "bidirectional";
  ExpectMatchesReference(c, 41);
}

TEST(RecurrentReferenceTest, LstmInputForgetAndClip) {
  RecurrentCase c = CaseFor("LSTM");
  c.input_forget = 1;
  c.clip = 0.3f;
  ExpectMatchesReference(c, 51);
}

TEST(RecurrentReferenceTest, ActivationsConsumeAlphaAndBetaInOrder) {
  // LeakyRelu takes alpha 0.2; HardSigmoid takes alpha 0.3 and beta 0.4; ScaledTanh
  // (reverse direction) takes alpha 0.9 and beta 1.1; Relu and Tanh take nothing.
  RecurrentCase gru = CaseFor("GRU");
  gru.direction = "bidirectional";
  gru.activations = {"HardSigmoid", "LeakyRelu", "Sigmoid", "ScaledTanh"};
  gru.alphas = {0.3f, 0.2f, 0.9f};
  gru.betas = {0.4f, 1.1f};
  ExpectMatchesReference(gru, 61);
  RecurrentCase lstm = CaseFor("LSTM");
  lstm.activations = {"Sigmoid", "Softsign", "Elu"};
  lstm.alphas = {0.5f};
  ExpectMatchesReference(lstm, 62);
  for (const std::string name : {"Relu", "Affine", "ThresholdedRelu", "Softplus"}) {
    RecurrentCase rnn = CaseFor("RNN");
    rnn.activations = {name};
    // ThresholdedRelu's threshold 0.1 leaves values on both sides.
    if (name == "Affine" || name == "ThresholdedRelu") rnn.alphas = {name == "Affine" ? 0.7f : 0.1f};
    if (name == "Affine") rnn.betas = {0.2f};
    ExpectMatchesReference(rnn, 63);
  }
}

TEST(RecurrentReferenceTest, OmittedOutputNamesKeepPositions) {
  const RecurrentCase c = CaseFor("LSTM");
  const CaseData data = MakeData(c, DType::kFloat32, 71);
  onnx::NodeProto node;
  node.set_op_type("LSTM");
  for (const char* name : {"x", "w", "r", "b"}) node.add_input(name);
  node.add_output("");
  node.add_output("");
  node.add_output("y_c");
  onnx::AttributeProto* hidden = node.add_attribute();
  hidden->set_name("hidden_size");
  hidden->set_type(onnx::AttributeProto::INT);
  hidden->set_i(c.hidden);
  RecurrentCase plain = c;
  plain.with_initial = plain.with_peephole = false;
  Expected<std::vector<Tensor>> out = RunNode(node, 14, {data.x.tensor, data.w.tensor, data.r.tensor, data.b.tensor});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const Outputs ref = Reference(plain, data);
  ExpectWithin(ToDoubles((*out)[2]), ref.y_c, Float32Bound(c, ref.state_steps), "Y_c alone");
}

TEST(RecurrentReferenceTest, MalformedInputsAreErrors) {
  RecurrentCase c = CaseFor("GRU");
  CaseData data = MakeData(c, DType::kFloat32, 81);
  data.r = RandomTensor(DType::kFloat32, {1, 3 * c.hidden, c.hidden + 1}, 82);
  Expected<std::vector<Tensor>> bad_r = RunCase(c, data);
  ASSERT_FALSE(bad_r.ok());
  EXPECT_EQ(bad_r.status().code(), ErrorCode::kInvalidModel);
  RecurrentCase long_seq = CaseFor("RNN");
  long_seq.lengths = {1, 4};  // longer than seq 3
  Expected<std::vector<Tensor>> bad_lengths = RunCase(long_seq, MakeData(long_seq, DType::kFloat32, 83));
  ASSERT_FALSE(bad_lengths.ok());
  EXPECT_EQ(bad_lengths.status().code(), ErrorCode::kInvalidModel);
  RecurrentCase unknown = CaseFor("RNN");
  unknown.activations = {"Gelu"};
  Expected<std::vector<Tensor>> bad_activation = RunCase(unknown, MakeData(unknown, DType::kFloat32, 84));
  ASSERT_FALSE(bad_activation.ok());
  EXPECT_EQ(bad_activation.status().code(), ErrorCode::kUnsupported);
  // float64 is valid ONNX but outside the float32-compute contract these kernels follow.
  const RecurrentCase lstm = CaseFor("LSTM");
  Expected<std::vector<Tensor>> float64 = RunCase(lstm, MakeData(lstm, DType::kFloat64, 85));
  ASSERT_FALSE(float64.ok());
  EXPECT_EQ(float64.status().code(), ErrorCode::kUnsupported);
}

// ---- float16 / bfloat16 against the float32 kernel on the same rounded inputs ----

// The same values as float32 tensors.
CaseData AsFloat32(const CaseData& low) {
  auto widen = [](const RoundedTensor& t) {
    return t.tensor.defined() ? Rounded(DType::kFloat32, t.tensor.shape(), t.values) : RoundedTensor{};
  };
  return {widen(low.x), widen(low.w), widen(low.r), widen(low.b), widen(low.h0), widen(low.c0), widen(low.p)};
}

double RoundTo(DType dtype, double value) {
  const float f = static_cast<float>(value);
  return dtype == DType::kFloat16 ? Float16::FromFloat(f).ToFloat() : BFloat16::FromFloat(f).ToFloat();
}

class RecurrentLowPrecisionTest : public ::testing::TestWithParam<DType> {};

TEST_P(RecurrentLowPrecisionTest, OneStepIsTheFloat32ResultRoundedOnce) {
  const DType dtype = GetParam();
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    c.seq = 1;
    c.direction = "bidirectional";
    const CaseData low = MakeData(c, dtype, 91);
    Expected<std::vector<Tensor>> out_low = RunCase(c, low);
    Expected<std::vector<Tensor>> out_f32 = RunCase(c, AsFloat32(low));
    ASSERT_TRUE(out_low.ok() && out_f32.ok());
    for (size_t o = 0; o < out_low->size(); ++o) {
      ASSERT_EQ((*out_low)[o].dtype(), dtype);
      const std::vector<double> got = ToDoubles((*out_low)[o]);
      const std::vector<double> f32 = ToDoubles((*out_f32)[o]);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], RoundTo(dtype, f32[i])) << op << " output " << o << " element " << i;
      }
    }
  }
}

TEST_P(RecurrentLowPrecisionTest, SequenceStaysWithinTheCarriedRoundingBound) {
  const DType dtype = GetParam();
  const double u = UnitRoundoff(dtype);
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    c.seq = 4;
    c.batch = 3;
    c.direction = "bidirectional";
    c.lengths = {4, 2, 1};
    const CaseData low = MakeData(c, dtype, 101);
    Expected<std::vector<Tensor>> out_low = RunCase(c, low);
    Expected<std::vector<Tensor>> out_f32 = RunCase(c, AsFloat32(low));
    ASSERT_TRUE(out_low.ok() && out_f32.ok());
    // Steps taken per element and max |C|, from the reference's bookkeeping.
    const Outputs steps = Reference(c, AsFloat32(low));
    ASSERT_LE(steps.max_cell, 2.0) << "the growth bound assumes |C| <= 2";
    const double carried = 1.0 + steps.max_cell;
    auto bound_of = [&](const std::vector<double>& counts) {
      std::vector<double> bound(counts.size());
      for (size_t i = 0; i < counts.size(); ++i) bound[i] = u * carried * Growth(static_cast<int64_t>(counts[i]));
      return bound;
    };
    ExpectWithin(ToDoubles((*out_low)[0]), ToDoubles((*out_f32)[0]), bound_of(steps.y_steps), op + " Y");
    ExpectWithin(ToDoubles((*out_low)[1]), ToDoubles((*out_f32)[1]), bound_of(steps.state_steps), op + " Y_h");
    if (IsLstm(c)) {
      ExpectWithin(ToDoubles((*out_low)[2]), ToDoubles((*out_f32)[2]), bound_of(steps.state_steps), op + " Y_c");
    }
    // Y_h is the last Y row each entry wrote, bit for bit (forward: t = len - 1; the
    // reverse direction ends at t = 0).
    const std::vector<double> y = ToDoubles((*out_low)[0]), y_h = ToDoubles((*out_low)[1]);
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t d = 0; d < 2; ++d) {
        const int64_t t = d == 0 ? c.lengths[b] - 1 : 0;
        for (int64_t j = 0; j < c.hidden; ++j) {
          EXPECT_EQ(y_h[(d * c.batch + b) * c.hidden + j], y[((t * 2 + d) * c.batch + b) * c.hidden + j]) << op;
        }
      }
    }
  }
}

// The documented choice: the carried H (and C) is the output dtype. Running the
// float32 kernel one step at a time, each step's outputs rounded and fed back as
// initial_h / initial_c, reproduces the low kernel exactly.
TEST_P(RecurrentLowPrecisionTest, CarriedStateIsRoundedEachStep) {
  const DType dtype = GetParam();
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    RecurrentCase c = CaseFor(op);
    const CaseData low = MakeData(c, dtype, 111);
    Expected<std::vector<Tensor>> out_low = RunCase(c, low);
    ASSERT_TRUE(out_low.ok());
    const std::vector<double> y_low = ToDoubles((*out_low)[0]);
    RecurrentCase one = c;
    one.seq = 1;
    CaseData step = AsFloat32(low);
    const int64_t x_row = c.batch * c.input, y_row = c.batch * c.hidden;
    for (int64_t t = 0; t < c.seq; ++t) {
      step.x = Rounded(DType::kFloat32, {1, c.batch, c.input},
                       std::vector<double>(low.x.values.begin() + t * x_row, low.x.values.begin() + (t + 1) * x_row));
      Expected<std::vector<Tensor>> out = RunCase(one, step);
      ASSERT_TRUE(out.ok());
      std::vector<std::vector<double>> rounded(out->size());
      for (size_t o = 0; o < out->size(); ++o) {
        for (double v : ToDoubles((*out)[o])) rounded[o].push_back(RoundTo(dtype, v));
      }
      for (int64_t i = 0; i < y_row; ++i) EXPECT_EQ(y_low[t * y_row + i], rounded[0][i]) << op << " t " << t;
      step.h0 = Rounded(DType::kFloat32, {1, c.batch, c.hidden}, rounded[1]);
      if (IsLstm(c)) step.c0 = Rounded(DType::kFloat32, {1, c.batch, c.hidden}, rounded[2]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LowDTypes, RecurrentLowPrecisionTest, ::testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return info.param == DType::kFloat16 ? std::string("Float16") : std::string("BFloat16");
                         });

}  // namespace
}  // namespace onnx_amp::testing
