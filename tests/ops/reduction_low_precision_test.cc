// Reductions in float16/bfloat16 against the float64 reduction of the same (rounded)
// inputs. The kernel widens to float32, folds K terms in order and rounds once, so
// with u32 = 2^-24, u_low the low type's unit roundoff and g(n) = n*u32 / (1 - n*u32):
//   recursive float32 summation:  |s - S| <= g(K-1) * sum|x|
//   one rounding to the low type: |out - s| <= u_low * |s| (+ half the smallest
//                                 subnormal, eta, when the result underflows)
// so |out - S| <= (g(K-1) + u_low * (1 + g(K-1))) * sum|x| + eta. Mean divides by K
// (one more float32 rounding: g(K)), SumSquare/L2 square first (g(K)), L2 takes a sqrt
// (halves the relative error, adds one rounding), Max/Min are exact.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {
namespace {

constexpr double kU32 = 0x1p-24;

double Gamma(int64_t n) { return n * kU32 / (1.0 - n * kU32); }

double UnitRoundoffOf(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-11 : 0x1p-8; }
// Half the smallest positive subnormal: the absolute rounding error near zero.
double HalfTiny(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-25 : 0x1p-134; }

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
};

// Reference reduction in float64 over the given axes (keepdims = 1): returns, for each
// output, the list of its input values.
std::vector<std::vector<double>> GroupByOutput(const std::vector<double>& x, const Shape& shape,
                                               const std::vector<int64_t>& axes) {
  const size_t rank = shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  int64_t outputs = 1;
  for (size_t d = 0; d < rank; ++d) outputs *= reduced[d] ? 1 : shape[d];
  std::vector<std::vector<double>> groups(outputs);
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < x.size(); ++flat) {
    int64_t out = 0;
    for (size_t d = 0; d < rank; ++d) out = out * (reduced[d] ? 1 : shape[d]) + (reduced[d] ? 0 : index[d]);
    groups[out].push_back(x[flat]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return groups;
}

enum class Kind { kSum, kMean, kSumSquare, kL1, kL2, kMax, kMin };

struct KindInfo {
  const char* op;
  Kind kind;
};

// The reference value and the error bound for one output.
void ReferenceAndBound(Kind kind, const std::vector<double>& terms, double u_low, double eta, double& ref,
                       double& bound) {
  const int64_t k = static_cast<int64_t>(terms.size());
  double sum = 0, abs_sum = 0, square_sum = 0, mx = -INFINITY, mn = INFINITY;
  for (double t : terms) {
    sum += t;
    abs_sum += std::fabs(t);
    square_sum += t * t;
    mx = std::max(mx, t);
    mn = std::min(mn, t);
  }
  switch (kind) {
    case Kind::kSum:
      ref = sum;
      bound = (Gamma(k - 1) + u_low * (1 + Gamma(k - 1))) * abs_sum + eta;
      return;
    case Kind::kMean:
      ref = sum / k;
      bound = (Gamma(k) + u_low * (1 + Gamma(k))) * abs_sum / k + eta;
      return;
    case Kind::kL1:
      ref = abs_sum;
      bound = (Gamma(k - 1) + u_low * (1 + Gamma(k - 1))) * abs_sum + eta;
      return;
    case Kind::kSumSquare:
      ref = square_sum;
      bound = (Gamma(k) + u_low * (1 + Gamma(k))) * square_sum + eta;
      return;
    case Kind::kL2:
      ref = std::sqrt(square_sum);
      bound = (Gamma(k) / 2 + kU32 + u_low) * (1 + Gamma(k)) * ref + eta;
      return;
    case Kind::kMax:
      ref = mx;
      bound = 0;
      return;
    case Kind::kMin:
      ref = mn;
      bound = 0;
      return;
  }
}

class ReductionLowPrecision : public ::testing::TestWithParam<KindInfo> {};

TEST_P(ReductionLowPrecision, WithinFloat32AccumulationBound) {
  const KindInfo info = GetParam();
  const ReduceCase cases[] = {
      {{4, 1000}, {1}},        // long contiguous rows
      {{4, 1000}, {0}},        // across rows
      {{6, 50, 20}, {0, 2}},   // non-adjacent axes
      {{3, 2000}, {0, 1}},     // everything, K = 6000
      {{40, 2500}, {0}},       // columns in chunks of 1024, the last one short
      {{3, 40, 1500}, {1}},    // columns of several images, chunks crossing images
  };
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const double u_low = UnitRoundoffOf(dtype);
    std::mt19937 rng(99);
    std::uniform_real_distribution<double> dist(-4.0, 4.0);
    for (const ReduceCase& c : cases) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + ShapeToString(c.shape));
      std::vector<double> values(NumElements(c.shape));
      for (double& v : values) v = dist(rng);
      const Tensor x = MakeFloatTensor(dtype, c.shape, values);
      Expected<std::vector<Tensor>> out =
          SingleNode(info.op, 18).Input(x).Input(MakeTensor<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)).Run();
      ASSERT_TRUE(out.ok()) << out.status().message();
      ASSERT_EQ(out->at(0).dtype(), dtype);
      const std::vector<double> got = ToDoubles(out->at(0));
      const auto groups = GroupByOutput(ToDoubles(x), c.shape, c.axes);
      ASSERT_EQ(got.size(), groups.size());
      for (size_t m = 0; m < groups.size(); ++m) {
        double ref = 0, bound = 0;
        ReferenceAndBound(info.kind, groups[m], u_low, HalfTiny(dtype), ref, bound);
        ASSERT_LE(std::fabs(got[m] - ref), bound) << info.op << " output " << m << ": got " << got[m] << ", ref " << ref;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReductionLowPrecision,
                         ::testing::Values(KindInfo{"ReduceSum", Kind::kSum}, KindInfo{"ReduceMean", Kind::kMean},
                                           KindInfo{"ReduceSumSquare", Kind::kSumSquare},
                                           KindInfo{"ReduceL1", Kind::kL1}, KindInfo{"ReduceL2", Kind::kL2},
                                           KindInfo{"ReduceMax", Kind::kMax}, KindInfo{"ReduceMin", Kind::kMin}),
                         [](const ::testing::TestParamInfo<KindInfo>& info) { return std::string(info.param.op); });

// 4096 ones: a float16 accumulator would stall at 2048 (2048 + 1 rounds back to 2048);
// the float32 accumulator gives 4096, which float16 holds exactly.
TEST(ReductionLowPrecision, AccumulatesInFloat32) {
  const Tensor x = MakeFloatTensor(DType::kFloat16, {4096}, std::vector<double>(4096, 1.0));
  Expected<std::vector<Tensor>> out = SingleNode("ReduceSum", 13).Attr("keepdims", int64_t{0}).Input(x).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToDoubles(out->at(0)), std::vector<double>{4096.0});
}

// CumSum: every prefix obeys the summation bound with its own K and sum|x|.
TEST(ReductionLowPrecision, CumSumPrefixesWithinBound) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    std::vector<double> values(3000);
    for (double& v : values) v = dist(rng);
    const Tensor x = MakeFloatTensor(dtype, {3000}, values);
    Expected<std::vector<Tensor>> out = SingleNode("CumSum", 14).Input(x).Input(MakeTensor<int64_t>({}, {0})).Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::vector<double> rounded = ToDoubles(x);
    const std::vector<double> got = ToDoubles(out->at(0));
    double sum = 0, abs_sum = 0;
    for (size_t k = 0; k < rounded.size(); ++k) {
      sum += rounded[k];
      abs_sum += std::fabs(rounded[k]);
      const double g = Gamma(static_cast<int64_t>(k));
      const double u_low = UnitRoundoffOf(dtype);
      ASSERT_LE(std::fabs(got[k] - sum), (g + u_low * (1 + g)) * abs_sum + HalfTiny(dtype)) << "prefix " << k;
    }
  }
}

// Selections compare exactly-widened values, so float16/bfloat16 ArgMax/ArgMin/TopK
// pick the same indices as float32 on the rounded inputs (rounding creates ties, which
// exercise the lower-index rule), and TopK's values are the selected inputs' bits.
TEST(ReductionLowPrecision, SelectionsMatchFloat32OnRoundedInputs) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> dist(-3.0, 3.0);
    std::vector<double> values(8 * 300);
    for (double& v : values) v = dist(rng);
    const Tensor low = MakeFloatTensor(dtype, {8, 300}, values);
    const Tensor f32 = MakeFloatTensor(DType::kFloat32, {8, 300}, ToDoubles(low));
    for (const char* op : {"ArgMax", "ArgMin"}) {
      for (int64_t axis : {0, 1}) {
        Expected<std::vector<Tensor>> a = SingleNode(op, 13).Attr("axis", axis).Input(low).Run();
        Expected<std::vector<Tensor>> b = SingleNode(op, 13).Attr("axis", axis).Input(f32).Run();
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(ToVector<int64_t>(a->at(0)), ToVector<int64_t>(b->at(0))) << op << " axis " << axis;
      }
    }
    const Tensor k = MakeTensor<int64_t>({1}, {40});
    Expected<std::vector<Tensor>> a = SingleNode("TopK", 11).NumOutputs(2).Input(low).Input(k).Run();
    Expected<std::vector<Tensor>> b = SingleNode("TopK", 11).NumOutputs(2).Input(f32).Input(k).Run();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(ToVector<int64_t>(a->at(1)), ToVector<int64_t>(b->at(1)));
    EXPECT_EQ(ToDoubles(a->at(0)), ToDoubles(b->at(0)));
  }
}

}  // namespace
}  // namespace onnx_amp::testing
