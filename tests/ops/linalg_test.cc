// MatMul, Gemm and Einsum against plain double-precision loops written here.
//
// Error bound. With inputs x, y held exactly in double, a float32 dot product of K
// terms (oneDNN, any summation order, FMA or not) satisfies
//   |c - sum x_k y_k| <= gamma_{K+3} * sum |x_k y_k|,   gamma_n = n u / (1 - n u),
// counting K - 1 additions, one rounding of each product (none for float16/bfloat16
// inputs, whose products are exact in float32, but we keep it), and one each for the
// alpha scale and for adding beta * C (itself rounded to float32) in Gemm. We use
// (K + 3) * u32 * 1.01 >= gamma_{K+3} for (K + 3) u32 < 0.01.
// A low-precision output rounds c once more: |round(c) - c| <= u_low |c|, so
//   |out - ref| <= u_low |ref| + (1 + u_low) (K + 3) u32 1.01 sum |x y| + floor,
// where floor covers float16's subnormal spacing (AbsoluteFloor).
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "ops/common/few_rows_matmul.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

struct Reference {
  Shape shape;
  std::vector<double> value, abs_sum;  // sum and sum of |terms| per output element
  int64_t k = 0;
};

std::vector<double> Bounds(const Reference& ref, DType dtype) {
  const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
  std::vector<double> bound(ref.value.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    bound[i] = u_low * std::abs(ref.value[i]) + (1 + u_low) * (ref.k + 3) * kUnitF32 * 1.01 * ref.abs_sum[i] +
               AbsoluteFloor(dtype);
  }
  return bound;
}

// numpy matmul, written independently of the kernel: promote 1-D operands, broadcast
// batch dims right-aligned.
Reference RefMatMul(Shape a_shape, const std::vector<double>& a, Shape b_shape, const std::vector<double>& b) {
  const bool a_vec = a_shape.size() == 1, b_vec = b_shape.size() == 1;
  if (a_vec) a_shape.insert(a_shape.begin(), 1);
  if (b_vec) b_shape.push_back(1);
  while (a_shape.size() < b_shape.size()) a_shape.insert(a_shape.begin(), 1);
  while (b_shape.size() < a_shape.size()) b_shape.insert(b_shape.begin(), 1);
  const size_t r = a_shape.size();
  const int64_t m = a_shape[r - 2], k = a_shape[r - 1], n = b_shape[r - 1];
  Shape batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(a_shape[i], b_shape[i]);
  Reference ref;
  ref.k = k;
  const int64_t batches = NumElements(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t a_off = 0, b_off = 0, rest = bi, a_scale = m * k, b_scale = k * n;
    for (int i = static_cast<int>(r) - 3; i >= 0; --i) {
      const int64_t idx = rest % batch[i];
      rest /= batch[i];
      a_off += (a_shape[i] == 1 ? 0 : idx) * a_scale;
      b_off += (b_shape[i] == 1 ? 0 : idx) * b_scale;
      a_scale *= a_shape[i];
      b_scale *= b_shape[i];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, abs_sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double term = a[a_off + i * k + kk] * b[b_off + kk * n + j];
          sum += term;
          abs_sum += std::abs(term);
        }
        ref.value.push_back(sum);
        ref.abs_sum.push_back(abs_sum);
      }
    }
  }
  ref.shape = batch;
  if (!a_vec) ref.shape.push_back(m);
  if (!b_vec) ref.shape.push_back(n);
  return ref;
}

void CheckMatMul(DType dtype, const Shape& a_shape, const Shape& b_shape, uint32_t seed) {
  const RoundedTensor a = RandomTensor(dtype, a_shape, seed);
  const RoundedTensor b = RandomTensor(dtype, b_shape, seed + 1);
  const Reference ref = RefMatMul(a_shape, a.values, b_shape, b.values);
  auto out = SingleNode("MatMul").Input(a.tensor).Input(b.tensor).Run();
  const std::string label = std::string(DTypeName(dtype)) + " " + ShapeToString(a_shape) + " @ " + ShapeToString(b_shape);
  ASSERT_TRUE(out.ok()) << label << ": " << out.status().message();
  EXPECT_EQ((*out)[0].shape(), ref.shape) << label;
  EXPECT_EQ((*out)[0].dtype(), dtype) << label;
  ExpectWithin(ToDoubles((*out)[0]), ref.value, Bounds(ref, dtype), label);
}

const std::vector<std::pair<Shape, Shape>> kMatMulShapes = {
    {{3, 4}, {4, 5}},           {{1, 1}, {1, 1}},         {{17, 64}, {64, 33}},     {{2, 3, 4}, {4, 5}},
    {{4}, {4, 5}},              {{2, 3, 4}, {4}},         {{4}, {4}},               {{2, 1, 3, 8}, {4, 8, 6}},
    {{1, 3, 8}, {5, 8, 2}},     {{7}, {3, 7, 2}},         {{3, 5, 256}, {3, 256, 7}}, {{2, 0, 4}, {4, 3}},
    {{2, 3, 0}, {0, 4}},
};

TEST(MatMulTest, Float32MatchesDoubleReference) {
  uint32_t seed = 1;
  for (const auto& [a, b] : kMatMulShapes) CheckMatMul(DType::kFloat32, a, b, seed += 2);
}

TEST(MatMulTest, Float16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 100;
  for (const auto& [a, b] : kMatMulShapes) CheckMatMul(DType::kFloat16, a, b, seed += 2);
}

TEST(MatMulTest, BFloat16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 200;
  for (const auto& [a, b] : kMatMulShapes) CheckMatMul(DType::kBFloat16, a, b, seed += 2);
}

TEST(MatMulTest, BFloat16NativeKernelsRoundOnce) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  uint32_t seed = 220;
  for (const auto& [a, b] : kMatMulShapes) CheckMatMul(DType::kBFloat16, a, b, seed += 2);
}

TEST(MatMulTest, BFloat16Float32KernelsRoundOnce) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  uint32_t seed = 240;
  for (const auto& [a, b] : kMatMulShapes) CheckMatMul(DType::kBFloat16, a, b, seed += 2);
}

TEST(MatMulTest, Float64MatchesDoubleReference) {
  uint32_t seed = 300;
  for (const auto& [a, b] : kMatMulShapes) {
    const RoundedTensor x = RandomTensor(DType::kFloat64, a, seed += 2), y = RandomTensor(DType::kFloat64, b, seed + 1);
    const Reference ref = RefMatMul(a, x.values, b, y.values);
    auto out = SingleNode("MatMul").Input(x.tensor).Input(y.tensor).Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<double> bound(ref.value.size());
    for (size_t i = 0; i < bound.size(); ++i) bound[i] = (ref.k + 1) * 0x1p-53 * 1.01 * ref.abs_sum[i];
    ExpectWithin(ToDoubles((*out)[0]), ref.value, bound, "float64 " + ShapeToString(a));
  }
}

TEST(MatMulTest, Float16OverflowsOnlyWhenTheOutputDoes) {
  // 60000 * 2 + 60000 * 2 = 240000 > 65504: inf, as a float16 store of the float32 sum.
  const Tensor a = MakeFloatTensor(DType::kFloat16, {2, 2}, {60000, 60000, 60000, -60000});
  const Tensor b = MakeFloatTensor(DType::kFloat16, {2, 1}, {2, 2});
  auto out = SingleNode("MatMul").Input(a).Input(b).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<double> y = ToDoubles((*out)[0]);
  EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
  // The partial sums exceed float16's range but the float32 accumulator holds them.
  EXPECT_EQ(y[1], 0.0);
  // 65504 is the largest finite float16 and survives.
  const Tensor c = MakeFloatTensor(DType::kFloat16, {1, 2}, {65504, 0});
  const Tensor d = MakeFloatTensor(DType::kFloat16, {2, 1}, {1, 1});
  auto out2 = SingleNode("MatMul").Input(c).Input(d).Run();
  ASSERT_TRUE(out2.ok());
  EXPECT_EQ(ToDoubles((*out2)[0])[0], 65504.0);
}

TEST(MatMulTest, BFloat16OverflowsToInfAndZerosStayZero) {
  const Tensor a = MakeFloatTensor(DType::kBFloat16, {1, 2}, {3e38, 3e38});
  const Tensor b = MakeFloatTensor(DType::kBFloat16, {2, 2}, {1, 0, 1, 0});
  auto out = SingleNode("MatMul").Input(a).Input(b).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<double> y = ToDoubles((*out)[0]);
  EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[1], 0.0);
}

TEST(MatMulTest, RejectsMismatchedInnerDims) {
  auto out = SingleNode("MatMul")
                 .Input(MakeFloatTensor(DType::kFloat32, {2, 3}, std::vector<double>(6, 1.0)))
                 .Input(MakeFloatTensor(DType::kFloat32, {4, 2}, std::vector<double>(8, 1.0)))
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidModel);
}

struct GemmCase {
  int64_t m, k, n;
  bool trans_a, trans_b;
  float alpha, beta;
  std::optional<Shape> c_shape;  // nullopt: no C; {} is a scalar C
};

// Checks every row_step-th row of the result and its last row (a product too large for a
// double reference of every element is sampled).
void CheckGemm(DType dtype, const GemmCase& g, uint32_t seed, int64_t row_step = 1) {
  const RoundedTensor a = RandomTensor(dtype, g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k}, seed);
  const RoundedTensor b = RandomTensor(dtype, g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n}, seed + 1);
  const bool has_c = g.c_shape.has_value();
  const Shape c_shape = g.c_shape.value_or(Shape{});
  const RoundedTensor c = RandomTensor(dtype, c_shape, seed + 2);
  SingleNode node("Gemm");
  node.Input(a.tensor).Input(b.tensor);
  if (has_c) node.Input(c.tensor);
  node.Attr("transA", int64_t{g.trans_a}).Attr("transB", int64_t{g.trans_b}).Attr("alpha", g.alpha).Attr("beta", g.beta);
  Reference ref;
  ref.k = g.k;
  ref.shape = {g.m, g.n};
  Shape c2 = c_shape;
  while (c2.size() < 2) c2.insert(c2.begin(), 1);
  // A's rows and B's columns gathered contiguous first: the panel cases reach 648M terms.
  std::vector<double> a_rows(static_cast<size_t>(g.m * g.k)), b_columns(static_cast<size_t>(g.n * g.k));
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t kk = 0; kk < g.k; ++kk) a_rows[i * g.k + kk] = g.trans_a ? a.values[kk * g.m + i] : a.values[i * g.k + kk];
  }
  for (int64_t j = 0; j < g.n; ++j) {
    for (int64_t kk = 0; kk < g.k; ++kk) b_columns[j * g.k + kk] = g.trans_b ? b.values[j * g.k + kk] : b.values[kk * g.n + j];
  }
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < g.m; i += row_step) rows.push_back(i);
  if (rows.back() != g.m - 1) rows.push_back(g.m - 1);
  for (const int64_t i : rows) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0, abs_sum = 0;
      for (int64_t kk = 0; kk < g.k; ++kk) {
        const double x = a_rows[i * g.k + kk];
        const double y = b_columns[j * g.k + kk];
        sum += x * y;
        abs_sum += std::abs(x * y);
      }
      sum *= g.alpha;
      abs_sum *= std::abs(g.alpha);
      if (has_c) {
        const double cv = g.beta * c.values[(c2[0] == 1 ? 0 : i) * c2[1] + (c2[1] == 1 ? 0 : j)];
        sum += cv;
        abs_sum += std::abs(cv);
      }
      ref.value.push_back(sum);
      ref.abs_sum.push_back(abs_sum);
    }
  }
  auto out = node.Run();
  const std::string label = std::string(DTypeName(dtype)) + " gemm m" + std::to_string(g.m) + " k" + std::to_string(g.k) +
                            " n" + std::to_string(g.n) + " tA" + std::to_string(g.trans_a) + " tB" +
                            std::to_string(g.trans_b) + " C" + (has_c ? ShapeToString(c_shape) : "none");
  ASSERT_TRUE(out.ok()) << label << ": " << out.status().message();
  EXPECT_EQ((*out)[0].shape(), ref.shape) << label;
  const std::vector<double> all = ToDoubles((*out)[0]);
  std::vector<double> sampled;
  for (const int64_t i : rows) sampled.insert(sampled.end(), all.begin() + i * g.n, all.begin() + (i + 1) * g.n);
  ExpectWithin(sampled, ref.value, Bounds(ref, dtype), label);
}

const std::vector<GemmCase> kGemmCases = {
    {3, 4, 5, false, false, 1.0f, 1.0f, std::nullopt}, {3, 4, 5, true, false, 1.0f, 1.0f, Shape{5}},
    {3, 4, 5, false, true, 0.5f, 2.0f, Shape{3, 5}},   {6, 33, 7, true, true, -1.5f, 0.25f, Shape{6, 1}},
    {8, 16, 9, false, false, 1.0f, 1.0f, Shape{1}},    {2, 128, 3, true, true, 2.0f, 0.0f, Shape{2, 3}},
    {5, 7, 4, false, false, 1.0f, 0.5f, Shape{}},      {1, 1, 1, true, true, 1.0f, 1.0f, Shape{1, 1}},
};

TEST(GemmTest, Float32MatchesDoubleReference) {
  uint32_t seed = 400;
  for (const GemmCase& g : kGemmCases) CheckGemm(DType::kFloat32, g, seed += 3);
}

TEST(GemmTest, Float16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 500;
  for (const GemmCase& g : kGemmCases) CheckGemm(DType::kFloat16, g, seed += 3);
}

TEST(GemmTest, BFloat16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 600;
  for (const GemmCase& g : kGemmCases) CheckGemm(DType::kBFloat16, g, seed += 3);
}

TEST(GemmTest, BFloat16NativeKernelsRoundOnce) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  uint32_t seed = 620;
  for (const GemmCase& g : kGemmCases) CheckGemm(DType::kBFloat16, g, seed += 3);
}

// Native bfloat16 products large enough to bring their operands into oneDNN's layouts
// first (ops/common/matmul_problem.cc): a transposed A copied dense (M a multiple of 16,
// or not: then read as it is), and a B packed on every call, plain and transposed, K
// a multiple of 32 or not. Every 7th row is checked.
TEST(GemmTest, BFloat16NativeLargeProductsRelayoutTheirOperands) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  const std::vector<GemmCase> cases = {
      {512, 1024, 256, true, false, 1.0f, 1.0f, std::nullopt},
      {256, 784, 512, false, false, 1.0f, 1.0f, Shape{512}},
      {256, 1024, 320, false, true, 0.5f, 1.0f, std::nullopt},
      {496, 800, 400, true, true, 1.0f, 1.0f, Shape{400}},
      {500, 1023, 256, true, false, 1.0f, 1.0f, std::nullopt},
  };
  uint32_t seed = 660;
  for (const GemmCase& g : cases) CheckGemm(DType::kBFloat16, g, seed += 3, 7);
}

// float32 products large enough to pack a B the node does not keep packed on every call:
// plain and transposed, K and N multiples of the blocks or not.
TEST(GemmTest, Float32LargeProductsPackTheirWeights) {
  const std::vector<GemmCase> cases = {
      {256, 784, 512, false, false, 1.0f, 1.0f, Shape{512}},
      {256, 1024, 320, false, true, 0.5f, 1.0f, std::nullopt},
      {496, 801, 400, true, true, 1.0f, 1.0f, Shape{400}},
  };
  uint32_t seed = 680;
  for (const GemmCase& g : cases) CheckGemm(DType::kFloat32, g, seed += 3, 7);
}

TEST(GemmTest, BFloat16Float32KernelsRoundOnce) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  uint32_t seed = 640;
  for (const GemmCase& g : kGemmCases) CheckGemm(DType::kBFloat16, g, seed += 3);
}

// float16 operands whose float32 copies pass the 4 MiB panel (2100 x 1100 floats) are
// widened a panel at a time (ops/common/widened_panels.cc), A plain and transposed, B
// plain and transposed, with a bias row, a full C and alpha: 1100 x 2100 x 40 takes all
// of B beside two row panels, 40 x 2100 x 1100 and 80 x 8000 x 270 all rows beside two
// column panels, 300 x 8000 x 270 (A transposed: each row panel a block of columns) five
// row panels, each beside two column panels.
TEST(GemmTest, LowPrecisionLargeOperandsWidenedInPanels) {
  const std::vector<GemmCase> cases = {
      {1100, 2100, 40, false, false, 1.0f, 1.0f, Shape{40}},
      {1100, 2100, 40, true, true, 1.0f, 1.0f, Shape{40}},
      {40, 2100, 1100, false, true, 1.0f, 1.0f, Shape{40, 1100}},
      {40, 2100, 1100, true, false, 0.5f, 2.0f, Shape{}},
      {80, 8000, 270, true, false, 1.0f, 1.0f, Shape{80, 270}},
      {80, 8000, 270, false, true, -0.5f, 1.0f, Shape{270}},
      {300, 8000, 270, true, false, 1.0f, 1.0f, Shape{300, 270}},
  };
  uint32_t seed = 700;
  for (const GemmCase& g : cases) CheckGemm(DType::kFloat16, g, seed += 3);
  // bfloat16 on float32 kernels takes the same panels.
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  for (const GemmCase& g : cases) CheckGemm(DType::kBFloat16, g, seed += 3);
}

// A product whose k is its shortest side and whose B fits no panel of all columns is cut
// along k (two 768-deep slices of 1500; SliceDepth in widened_panels.cc): the slices'
// products summed in order, the bias and C added once, alpha on every slice; a float16
// output sums each 1280-row panel in a work block. Every 7th row is checked against the
// double reference (5 G terms in all).
TEST(GemmTest, LowPrecisionProductsCutAlongK) {
  const std::vector<GemmCase> cases = {
      {2200, 1500, 1504, false, false, 1.0f, 1.0f, Shape{1504}},
      {2200, 1500, 1504, true, true, 0.5f, 2.0f, Shape{2200, 1504}},
  };
  uint32_t seed = 760;
  for (const GemmCase& g : cases) CheckGemm(DType::kFloat16, g, seed += 3, 7);
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  for (const GemmCase& g : cases) CheckGemm(DType::kBFloat16, g, seed += 3, 7);
}

// Products of at most four rows run on their own vector kernels (few_rows_matmul.h):
// B rows contiguous (transB = 0) and columns contiguous (transB = 1), k and n not
// multiples of the lanes, transposed A, alpha, a bias row and a full C.
const std::vector<GemmCase> kFewRowsCases = {
    {1, 37, 67, false, false, 1.0f, 1.0f, std::nullopt},   {2, 1000, 130, false, true, 1.0f, 1.0f, Shape{130}},
    {3, 16, 4, true, false, 0.5f, 2.0f, Shape{3, 4}},      {4, 250, 33, true, true, -1.0f, 1.0f, Shape{33}},
    {4, 4096, 70, false, true, 1.0f, 0.5f, Shape{4, 70}},  {1, 3, 1, false, false, 1.0f, 1.0f, Shape{1}},
};

void CheckFewRowsPath(FewRowsPath path, uint32_t seed) {
  const ScopedFewRowsPath scoped(path);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const GemmCase& g : kFewRowsCases) CheckGemm(dtype, g, seed += 3);
  }
}

TEST(GemmTest, FewRowsOnAvx512MatchDoubleReference) {
  if (!FewRowsPathSupported(FewRowsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  CheckFewRowsPath(FewRowsPath::kAvx512, 800);
}

TEST(GemmTest, FewRowsOnAvx2MatchDoubleReference) {
  if (!FewRowsPathSupported(FewRowsPath::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 with FMA and F16C";
  CheckFewRowsPath(FewRowsPath::kAvx2, 900);
}

TEST(GemmTest, Float16BiasKeepsTheSumInFloat32) {
  // A @ B = 69632 overflows float16 alone, but C = -60000 brings the sum back to
  // 9632: a single rounding of the float32 result, not of the product (all values
  // here are exact in float16).
  const Tensor a = MakeFloatTensor(DType::kFloat16, {1, 2}, {34816, 34816});
  const Tensor b = MakeFloatTensor(DType::kFloat16, {2, 1}, {1, 1});
  const Tensor c = MakeFloatTensor(DType::kFloat16, {1}, {-60000});
  auto out = SingleNode("Gemm").Input(a).Input(b).Input(c).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToDoubles((*out)[0])[0], 9632.0);
}

TEST(GemmTest, RepeatedCallsReuseThePrimitiveAndAgree) {
  const RoundedTensor a = RandomTensor(DType::kFloat32, {16, 32}, 7), b = RandomTensor(DType::kFloat32, {32, 8}, 8);
  auto first = SingleNode("Gemm").Input(a.tensor).Input(b.tensor).Run();
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) {
    auto again = SingleNode("Gemm").Input(a.tensor).Input(b.tensor).Run();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(ToDoubles((*again)[0]), ToDoubles((*first)[0]));
  }
}

TEST(GemmTest, ConcurrentCallsShareCachedPrimitivesSafely) {
  // Two threads run the same cached primitives at once; each brings its own stream and
  // scratchpad, so both get the single-threaded answer.
  const RoundedTensor a = RandomTensor(DType::kFloat32, {64, 96}, 21), b = RandomTensor(DType::kFloat32, {96, 48}, 22);
  auto single = SingleNode("MatMul").Input(a.tensor).Input(b.tensor).Run();
  ASSERT_TRUE(single.ok());
  const std::vector<double> want = ToDoubles((*single)[0]);
  std::atomic<int> mismatches{0};
  auto worker = [&] {
    for (int i = 0; i < 20; ++i) {
      auto out = SingleNode("MatMul").Input(a.tensor).Input(b.tensor).Run();
      if (!out.ok() || ToDoubles((*out)[0]) != want) ++mismatches;
    }
  };
  std::thread first(worker), second(worker);
  first.join();
  second.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Einsum cases with their references computed by explicit loops.
TEST(EinsumTest, CommonEquationsMatchLoops) {
  const RoundedTensor a = RandomTensor(DType::kFloat32, {3, 4}, 11);
  const RoundedTensor b = RandomTensor(DType::kFloat32, {4, 5}, 12);
  const RoundedTensor sq = RandomTensor(DType::kFloat32, {4, 4}, 13);
  const RoundedTensor ba = RandomTensor(DType::kFloat32, {2, 3, 4}, 14);
  const RoundedTensor bb = RandomTensor(DType::kFloat32, {2, 4, 5}, 15);
  const double tol = 8 * kUnitF32 * 16;  // K <= 4 terms of magnitude <= 1, plus slack
  auto run = [](const std::string& equation, std::vector<Tensor> inputs) {
    SingleNode node("Einsum", 12);
    node.Attr("equation", equation);
    for (Tensor& t : inputs) node.Input(t);
    auto out = node.Run();
    EXPECT_TRUE(out.ok()) << equation << ": " << out.status().message();
    return out.ok() ? ToDoubles((*out)[0]) : std::vector<double>();
  };
  auto expect_near = [&](const std::vector<double>& got, const std::vector<double>& want, const std::string& eq) {
    ExpectWithin(got, want, std::vector<double>(want.size(), tol), eq);
  };
  {  // matmul, explicit and implicit
    std::vector<double> want(15, 0.0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k) want[i * 5 + j] += a.values[i * 4 + k] * b.values[k * 5 + j];
    expect_near(run("ij,jk->ik", {a.tensor, b.tensor}), want, "ij,jk->ik");
    expect_near(run("ij,jk", {a.tensor, b.tensor}), want, "ij,jk");
  }
  {  // batched matmul, with an ellipsis too
    std::vector<double> want(30, 0.0);
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j)
          for (int k = 0; k < 4; ++k) want[(n * 3 + i) * 5 + j] += ba.values[(n * 3 + i) * 4 + k] * bb.values[(n * 4 + k) * 5 + j];
    expect_near(run("bij,bjk->bik", {ba.tensor, bb.tensor}), want, "bij,bjk->bik");
    expect_near(run("...ij,...jk->...ik", {ba.tensor, bb.tensor}), want, "...ij,...jk->...ik");
  }
  {  // transpose, diagonal, trace, full sum, row sums
    std::vector<double> t(12), diag(4), trace(1, 0.0), total(1, 0.0), rows(3, 0.0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) t[j * 3 + i] = a.values[i * 4 + j], total[0] += a.values[i * 4 + j], rows[i] += a.values[i * 4 + j];
    for (int i = 0; i < 4; ++i) diag[i] = sq.values[i * 5], trace[0] += sq.values[i * 5];
    expect_near(run("ij->ji", {a.tensor}), t, "ij->ji");
    expect_near(run("ii->i", {sq.tensor}), diag, "ii->i");
    expect_near(run("ii", {sq.tensor}), trace, "ii");
    expect_near(run("ij->", {a.tensor}), total, "ij->");
    expect_near(run("ij->i", {a.tensor}), rows, "ij->i");
  }
  {  // outer product
    std::vector<double> want(16);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) want[i * 4 + j] = sq.values[i] * sq.values[4 + j];
    const Tensor u = MakeFloatTensor(DType::kFloat32, {4}, {sq.values.begin(), sq.values.begin() + 4});
    const Tensor v = MakeFloatTensor(DType::kFloat32, {4}, {sq.values.begin() + 4, sq.values.begin() + 8});
    expect_near(run("i,j->ij", {u, v}), want, "i,j->ij");
  }
}

TEST(EinsumTest, AttentionScoresRoundOnceInEveryDtype) {
  // "bqhd,bkhd->bhqk": batch b, h; M q; N k; K d (the matmul path with permutes).
  const int64_t nb = 2, nq = 5, nk = 6, nh = 3, nd = 16;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    const RoundedTensor a = RandomTensor(dtype, {nb, nq, nh, nd}, 31), b = RandomTensor(dtype, {nb, nk, nh, nd}, 32);
    SingleNode node("Einsum", 12);
    node.Attr("equation", std::string("bqhd,bkhd->bhqk")).Input(a.tensor).Input(b.tensor);
    auto out = node.Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ((*out)[0].shape(), (Shape{nb, nh, nq, nk}));
    Reference ref;
    ref.k = nd;
    for (int64_t bi = 0; bi < nb; ++bi)
      for (int64_t h = 0; h < nh; ++h)
        for (int64_t q = 0; q < nq; ++q)
          for (int64_t k = 0; k < nk; ++k) {
            double sum = 0, abs_sum = 0;
            for (int64_t d = 0; d < nd; ++d) {
              const double term = a.values[((bi * nq + q) * nh + h) * nd + d] * b.values[((bi * nk + k) * nh + h) * nd + d];
              sum += term;
              abs_sum += std::abs(term);
            }
            ref.value.push_back(sum);
            ref.abs_sum.push_back(abs_sum);
          }
    ExpectWithin(ToDoubles((*out)[0]), ref.value, Bounds(ref, dtype), std::string(DTypeName(dtype)) + " attention einsum");
  }
}

TEST(EinsumTest, RejectsRankMismatch) {
  SingleNode node("Einsum", 12);
  node.Attr("equation", std::string("ijk,jk->i")).Input(MakeFloatTensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4}));
  node.Input(MakeFloatTensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4}));
  auto out = node.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidModel);
}

}  // namespace
}  // namespace onnx_amp::testing
