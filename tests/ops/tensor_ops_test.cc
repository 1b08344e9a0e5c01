// Shape / data-movement kernels: hand-derived cases for the tricky semantics (Reshape's
// 0 and -1, negative Slice steps, Gather's negative and bad indices, Pad's modes) and
// bit-exact float16/bfloat16 moves. Resize: resize_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops/single_node_harness.h"
#include "tests/ops/tensor_test_util.h"

namespace onnx_amp::testing {
namespace {

// ---- Reshape and friends ---------------------------------------------------------

TEST(ReshapeTest, ZeroCopiesAndMinusOneInfers) {
  const Tensor x = MakeTensor<float>({2, 3, 4}, Iota(24));
  const Tensor y = RunOne(SingleNode("Reshape", 14).Input(x).Input(Int64s({0, -1, 2})));
  EXPECT_EQ(y.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(ToVector<float>(y), Iota(24));
  // A view: the output shares the input's buffer.
  EXPECT_EQ(y.raw_data(), x.raw_data());
}

TEST(ReshapeTest, AllowZeroKeepsALiteralZero) {
  const Tensor x = MakeTensor<float>({0, 3}, {});
  const Tensor y = RunOne(SingleNode("Reshape", 14).Attr("allowzero", int64_t{1}).Input(x).Input(Int64s({3, 0})));
  EXPECT_EQ(y.shape(), (Shape{3, 0}));
  // Without allowzero the 0 copies the input's dimension 1: [3, 3] holds 9 elements, not 0.
  ExpectNodeError(SingleNode("Reshape", 14).Input(x).Input(Int64s({3, 0})), ErrorCode::kInvalidModel, "reshape");
  // allowzero forbids mixing a literal 0 with -1.
  ExpectNodeError(SingleNode("Reshape", 14).Attr("allowzero", int64_t{1}).Input(x).Input(Int64s({0, -1})),
                  ErrorCode::kInvalidModel, "-1");
}

TEST(ReshapeTest, ElementCountMismatchIsAnError) {
  const Tensor x = MakeTensor<float>({2, 3, 4}, Iota(24));
  ExpectNodeError(SingleNode("Reshape", 14).Input(x).Input(Int64s({5, -1})), ErrorCode::kInvalidModel, "reshape");
  ExpectNodeError(SingleNode("Reshape", 14).Input(x).Input(Int64s({5, 5})), ErrorCode::kInvalidModel, "reshape");
  ExpectNodeError(SingleNode("Reshape", 14).Input(x).Input(Int64s({-1, -1})), ErrorCode::kInvalidModel, "-1");
}

TEST(ReshapeTest, SqueezeUnsqueezeFlattenAcrossOpsets) {
  const Tensor x = MakeTensor<float>({1, 3, 1, 2}, Iota(6));
  EXPECT_EQ(RunOne(SingleNode("Squeeze", 13).Input(x).Input(Int64s({-2}))).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(RunOne(SingleNode("Squeeze", 11).Attr("axes", std::vector<int64_t>{0, 2}).Input(x)).shape(),
            (Shape{3, 2}));
  EXPECT_EQ(RunOne(SingleNode("Squeeze", 13).Input(x)).shape(), (Shape{3, 2}));
  ExpectNodeError(SingleNode("Squeeze", 13).Input(x).Input(Int64s({1})), ErrorCode::kInvalidModel, "not 1");
  EXPECT_EQ(RunOne(SingleNode("Unsqueeze", 13).Input(x).Input(Int64s({-1, 0}))).shape(),
            (Shape{1, 1, 3, 1, 2, 1}));
  EXPECT_EQ(RunOne(SingleNode("Unsqueeze", 11).Attr("axes", std::vector<int64_t>{1}).Input(x)).shape(),
            (Shape{1, 1, 3, 1, 2}));
  EXPECT_EQ(RunOne(SingleNode("Flatten", 13).Attr("axis", int64_t{-1}).Input(x)).shape(), (Shape{3, 2}));
  EXPECT_EQ(RunOne(SingleNode("Flatten", 13).Attr("axis", int64_t{0}).Input(x)).shape(), (Shape{1, 6}));
}

TEST(ShapeTest, StartAndEndClamp) {
  const Tensor x = MakeTensor<float>({2, 3, 4, 5}, Iota(120));
  EXPECT_EQ(ToVector<int64_t>(RunOne(SingleNode("Shape", 15).Input(x))), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ToVector<int64_t>(RunOne(SingleNode("Shape", 15).Attr("start", int64_t{-3}).Attr("end", int64_t{-1}).Input(x))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ToVector<int64_t>(RunOne(SingleNode("Shape", 15).Attr("start", int64_t{-10}).Attr("end", int64_t{10}).Input(x))),
            (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ToVector<int64_t>(RunOne(SingleNode("Size", 13).Input(x))), (std::vector<int64_t>{120}));
}

// ---- Slice ------------------------------------------------------------------------

TEST(SliceTest, NegativeStepsWalkBackwards) {
  const Tensor x = MakeTensor<float>({10}, Iota(10));
  // 8, 5, 2: start 8, stop before 1, step -3.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({8})).Input(Int64s({1}))
                                        .Input(Int64s({0})).Input(Int64s({-3})))),
            (std::vector<float>{8, 5, 2}));
  // The whole axis reversed: start -1, end clamped from INT64_MIN to "before 0".
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({-1}))
                                        .Input(Int64s({std::numeric_limits<int64_t>::min()}))
                                        .Input(Int64s({0})).Input(Int64s({-1})))),
            (std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  // Start beyond the end clamps to the last element.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({100})).Input(Int64s({6}))
                                        .Input(Int64s({0})).Input(Int64s({-2})))),
            (std::vector<float>{9, 7}));
}

TEST(SliceTest, TwoAxesWithNegativeAxesAndClamping) {
  // x[r][c] = 4r + c on a 3x4 grid; rows 2, 0 (step -2), columns 3, 2, 1 (step -1).
  const Tensor x = MakeTensor<float>({3, 4}, Iota(12));
  const Tensor y = RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({2, -1})).Input(Int64s({-10, 0}))
                              .Input(Int64s({0, -1})).Input(Int64s({-2, -1})));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(ToVector<float>(y), (std::vector<float>{11, 10, 9, 3, 2, 1}));
  // Opset 1 attributes; an end past the axis is clamped.
  const Tensor z = RunOne(SingleNode("Slice", 1).Attr("starts", std::vector<int64_t>{1})
                              .Attr("ends", std::vector<int64_t>{1000}).Attr("axes", std::vector<int64_t>{1}).Input(x));
  EXPECT_EQ(ToVector<float>(z), (std::vector<float>{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  // Empty result when start >= end.
  EXPECT_EQ(RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({3})).Input(Int64s({1})).Input(Int64s({1})))
                .shape(),
            (Shape{3, 0}));
  ExpectNodeError(SingleNode("Slice", 13).Input(x).Input(Int64s({0})).Input(Int64s({1})).Input(Int64s({0}))
                      .Input(Int64s({0})),
                  ErrorCode::kInvalidModel, "step");
}

// ---- Gather family ----------------------------------------------------------------

TEST(GatherTest, NegativeIndicesCountFromTheEnd) {
  const Tensor x = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor rows = RunOne(SingleNode("Gather", 13).Input(x).Input(MakeTensor<int64_t>({2}, {-1, 0})));
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(ToVector<float>(rows), (std::vector<float>{5, 6, 1, 2}));
  const Tensor cols =
      RunOne(SingleNode("Gather", 13).Attr("axis", int64_t{1}).Input(x).Input(MakeTensor<int32_t>({2, 1}, {-2, 1})));
  EXPECT_EQ(cols.shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(ToVector<float>(cols), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(GatherTest, OutOfRangeIndexIsAnErrorNamingTheNode) {
  const Tensor x = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectNodeError(SingleNode("Gather", 13).Input(x).Input(MakeTensor<int64_t>({2}, {0, 3})),
                  ErrorCode::kInvalidArgument, "out of range");
  ExpectNodeError(SingleNode("Gather", 13).Input(x).Input(MakeTensor<int64_t>({1}, {-4})),
                  ErrorCode::kInvalidArgument, "-4");
  ExpectNodeError(SingleNode("GatherElements", 13).Input(x).Input(MakeTensor<int64_t>({1, 2}, {0, 7})),
                  ErrorCode::kInvalidArgument, "7");
  ExpectNodeError(SingleNode("GatherND", 13).Input(x).Input(MakeTensor<int64_t>({1, 2}, {2, 2})),
                  ErrorCode::kInvalidArgument, "out of range");
}

TEST(GatherTest, ElementsAndNdWithBatchDims) {
  // GatherElements, axis 1: out[i][j] = x[i][idx[i][j]].
  const Tensor x = MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(ToVector<int32_t>(RunOne(SingleNode("GatherElements", 13).Attr("axis", int64_t{1}).Input(x)
                                         .Input(MakeTensor<int64_t>({2, 2}, {0, 0, -1, 0})))),
            (std::vector<int32_t>{1, 1, 4, 3}));
  // GatherND with batch_dims 1 (the ONNX specification's example 5).
  const Tensor data = MakeTensor<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor y = RunOne(SingleNode("GatherND", 13).Attr("batch_dims", int64_t{1}).Input(data)
                              .Input(MakeTensor<int64_t>({2, 1}, {1, 0})));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(ToVector<int32_t>(y), (std::vector<int32_t>{2, 3, 4, 5}));
}

TEST(ScatterTest, ElementsReductionsAndNdDuplicates) {
  const Tensor data = MakeTensor<float>({1, 5}, {1, 2, 3, 4, 5});
  const Tensor indices = MakeTensor<int64_t>({1, 2}, {1, 1});
  const Tensor updates = MakeTensor<float>({1, 2}, {1.1f, 2.1f});
  auto scatter = [&](const std::string& reduction) {
    return ToVector<float>(RunOne(SingleNode("ScatterElements", 18).Attr("axis", int64_t{1})
                                      .Attr("reduction", reduction).Input(data).Input(indices).Input(updates)));
  };
  EXPECT_EQ(scatter("add"), (std::vector<float>{1, 2 + 1.1f + 2.1f, 3, 4, 5}));
  EXPECT_EQ(scatter("mul"), (std::vector<float>{1, 2 * 1.1f * 2.1f, 3, 4, 5}));
  EXPECT_EQ(scatter("max"), (std::vector<float>{1, 2.1f, 3, 4, 5}));
  EXPECT_EQ(scatter("min"), (std::vector<float>{1, 1.1f, 3, 4, 5}));
  // Negative index, no reduction.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("ScatterElements", 13).Attr("axis", int64_t{1}).Input(data)
                                       .Input(MakeTensor<int64_t>({1, 1}, {-1})).Input(MakeTensor<float>({1, 1}, {9})))),
            (std::vector<float>{1, 2, 3, 4, 9}));
  // ScatterND add with a repeated index accumulates both rows.
  const Tensor nd = RunOne(SingleNode("ScatterND", 16).Attr("reduction", std::string("add"))
                               .Input(MakeTensor<float>({3, 2}, {1, 1, 1, 1, 1, 1}))
                               .Input(MakeTensor<int64_t>({2, 1}, {2, 2}))
                               .Input(MakeTensor<float>({2, 2}, {1, 2, 10, 20})));
  EXPECT_EQ(ToVector<float>(nd), (std::vector<float>{1, 1, 1, 1, 12, 23}));
  ExpectNodeError(SingleNode("ScatterND", 16).Input(data).Input(MakeTensor<int64_t>({1, 2}, {0, 5}))
                      .Input(MakeTensor<float>({1}, {0})),
                  ErrorCode::kInvalidArgument, "out of range");
}

// ---- Pad ----------------------------------------------------------------------------

// The ONNX specification's 3x2 example, padded by two columns in front.
const std::vector<float> kPadData = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};

std::vector<float> PadWith(const std::string& mode, const std::vector<int64_t>& pads) {
  return ToVector<float>(RunOne(SingleNode("Pad", 19).Attr("mode", mode).Input(MakeTensor<float>({3, 2}, kPadData))
                                    .Input(Int64s(pads))));
}

TEST(PadTest, Modes) {
  EXPECT_EQ(PadWith("constant", {0, 2, 0, 0}),
            (std::vector<float>{0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  EXPECT_EQ(PadWith("reflect", {0, 2, 0, 0}),
            (std::vector<float>{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  EXPECT_EQ(PadWith("edge", {0, 2, 0, 0}),
            (std::vector<float>{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
  // wrap with pads [2, 1, 1, 1] (the specification's example).
  EXPECT_EQ(PadWith("wrap", {2, 1, 1, 1}),
            (std::vector<float>{3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f,
                                3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f}));
}

TEST(PadTest, ReflectBeyondOnePeriodNegativeCropAndConstantValue) {
  // numpy.pad([1, 2, 3], 4, mode="reflect") = [1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3].
  const Tensor x = Floats({1, 2, 3});
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Pad", 13).Attr("mode", std::string("reflect")).Input(x)
                                       .Input(Int64s({4, 4})))),
            (std::vector<float>{1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
  // A negative pad crops; the constant comes from input 2.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Pad", 13).Input(x).Input(Int64s({-1, 2})).Input(Floats({7})))),
            (std::vector<float>{2, 3, 7, 7}));
  // Opset 2 attributes; axes (opset 18) select which axes the pads describe.
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Pad", 2).Attr("pads", std::vector<int64_t>{1, 0})
                                       .Attr("value", 5.0f).Input(x))),
            (std::vector<float>{5, 1, 2, 3}));
  const Tensor grid = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Pad", 18).Attr("mode", std::string("edge")).Input(grid)
                                       .Input(Int64s({0, 1}))
                                       .Input(Tensor())
                                       .Input(Int64s({-1})))),
            (std::vector<float>{1, 2, 2, 3, 4, 4}));
}

// ---- Bit-exact moves of float16 / bfloat16 -----------------------------------------

// NaN with a payload, signalling-NaN-like bits, -0, +-inf, the smallest subnormal and
// the largest finite value: any arithmetic round trip would disturb some of them.
const std::vector<uint16_t> kHalfBits = {0x7E01, 0x7C01, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x7BFF, 0x3C00};
const std::vector<uint16_t> kBFloatBits = {0x7FC1, 0x7F81, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x7F7F, 0x3F80};

template <typename T>
Tensor BitsTensor(const Shape& shape, const std::vector<uint16_t>& bits) {
  std::vector<T> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = T::FromBits(bits[i]);
  return MakeTensor<T>(shape, values);
}

template <typename T>
std::vector<uint16_t> Bits(const Tensor& tensor) {
  std::vector<uint16_t> bits;
  for (const T& value : ToVector<T>(tensor)) bits.push_back(value.bits);
  return bits;
}

template <typename T>
void CheckBitExactMoves(const std::vector<uint16_t>& b) {
  const Tensor x = BitsTensor<T>({2, 4}, b);
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Transpose", 13).Input(x))),
            (std::vector<uint16_t>{b[0], b[4], b[1], b[5], b[2], b[6], b[3], b[7]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({-1})).Input(Int64s({-100}))
                               .Input(Int64s({1})).Input(Int64s({-1})))),
            (std::vector<uint16_t>{b[3], b[2], b[1], b[0], b[7], b[6], b[5], b[4]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Gather", 13).Attr("axis", int64_t{1}).Input(x).Input(Int64s({-1, 0})))),
            (std::vector<uint16_t>{b[3], b[0], b[7], b[4]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Concat", 13).Attr("axis", int64_t{0}).Input(x).Input(x))),
            (std::vector<uint16_t>{b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[0], b[1], b[2], b[3], b[4],
                                   b[5], b[6], b[7]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Pad", 13).Attr("mode", std::string("reflect")).Input(x)
                               .Input(Int64s({0, 1, 0, 0})))),
            (std::vector<uint16_t>{b[1], b[0], b[1], b[2], b[3], b[5], b[4], b[5], b[6], b[7]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Resize", 13).Input(x).Input(Tensor()).Input(Floats({1, 0.5f})))),
            (std::vector<uint16_t>{b[0], b[2], b[4], b[6]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Expand", 13).Input(BitsTensor<T>({2, 1}, {b[0], b[5]}))
                               .Input(Int64s({2, 3})))),
            (std::vector<uint16_t>{b[0], b[0], b[0], b[5], b[5], b[5]}));
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Tile", 13).Input(BitsTensor<T>({2}, {b[2], b[6]})).Input(Int64s({3})))),
            (std::vector<uint16_t>{b[2], b[6], b[2], b[6], b[2], b[6]}));
  Expected<std::vector<Tensor>> split =
      SingleNode("Split", 18).Attr("axis", int64_t{1}).Attr("num_outputs", int64_t{2}).NumOutputs(2).Input(x).Run();
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(Bits<T>((*split)[1]), (std::vector<uint16_t>{b[2], b[3], b[6], b[7]}));
  // half_pixel at scale 0.5 reads coordinates 0.5 and 2.5: round_prefer_floor takes 0 and 2.
  // Pad's constant value is copied as bits too.
  EXPECT_EQ(Bits<T>(RunOne(SingleNode("Pad", 13).Input(BitsTensor<T>({1}, {b[3]})).Input(Int64s({1, 0}))
                               .Input(BitsTensor<T>({}, {b[0]})))),
            (std::vector<uint16_t>{b[0], b[3]}));
}

TEST(BitExactTest, Float16Moves) { CheckBitExactMoves<Float16>(kHalfBits); }
TEST(BitExactTest, BFloat16Moves) { CheckBitExactMoves<BFloat16>(kBFloatBits); }

// ---- Larger copies against naive loops (exercises the tiled and threaded paths) ----

TEST(TransposeTest, FourDimensionalPermutationsMatchNaiveIndexing) {
  const Shape shape = {2, 37, 19, 45};
  const int64_t count = 2 * 37 * 19 * 45;
  std::vector<int32_t> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<int32_t>(i * 7 + 3);
  const Tensor x = MakeTensor<int32_t>(shape, values);
  const std::vector<std::vector<int64_t>> perms = {{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 3, 2}};
  for (const std::vector<int64_t>& perm : perms) {
    const Tensor y = RunOne(SingleNode("Transpose", 13).Attr("perm", perm).Input(x));
    Shape out_shape(4);
    for (int k = 0; k < 4; ++k) out_shape[k] = shape[perm[k]];
    ASSERT_EQ(y.shape(), out_shape);
    const int32_t* got = y.data<int32_t>();
    int64_t mismatches = 0;
    int64_t o = 0;
    int64_t in_index[4];
    for (int64_t a = 0; a < out_shape[0]; ++a) {
      for (int64_t b = 0; b < out_shape[1]; ++b) {
        for (int64_t c = 0; c < out_shape[2]; ++c) {
          for (int64_t d = 0; d < out_shape[3]; ++d, ++o) {
            in_index[perm[0]] = a;
            in_index[perm[1]] = b;
            in_index[perm[2]] = c;
            in_index[perm[3]] = d;
            const int64_t src = ((in_index[0] * shape[1] + in_index[1]) * shape[2] + in_index[2]) * shape[3] + in_index[3];
            if (got[o] != values[src]) ++mismatches;
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << "perm " << perm[0] << perm[1] << perm[2] << perm[3];
  }
}

TEST(CopyTest, LargeGatherConcatAndPadMatchNaiveLoops) {
  // Big enough to be split across the thread pool.
  const int64_t rows = 600;
  const int64_t cols = 257;
  std::vector<int64_t> values(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) values[i] = i * 31 + 7;
  const Tensor x = MakeTensor<int64_t>({rows, cols}, values);

  std::vector<int64_t> picks(1000);
  for (int64_t i = 0; i < 1000; ++i) picks[i] = (i * 7919) % (2 * rows) - rows;  // in [-rows, rows)
  const std::vector<int64_t> gathered =
      ToVector<int64_t>(RunOne(SingleNode("Gather", 13).Input(x).Input(MakeTensor<int64_t>({1000}, picks))));
  int64_t mismatches = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const int64_t row = picks[i] < 0 ? picks[i] + rows : picks[i];
    for (int64_t c = 0; c < cols; ++c) mismatches += gathered[i * cols + c] != values[row * cols + c];
  }
  EXPECT_EQ(mismatches, 0);

  const Tensor head = RunOne(SingleNode("Slice", 13).Input(x).Input(Int64s({0})).Input(Int64s({100}))
                                 .Input(Int64s({1})));
  const std::vector<int64_t> joined =
      ToVector<int64_t>(RunOne(SingleNode("Concat", 13).Attr("axis", int64_t{-1}).Input(x).Input(head).Input(x)));
  const int64_t width = 2 * cols + 100;
  mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const int64_t source = c < cols ? c : (c < cols + 100 ? c - cols : c - cols - 100);
      mismatches += joined[r * width + c] != values[r * cols + source];
    }
  }
  EXPECT_EQ(mismatches, 0);

  // Edge padding by (3, 5) rows and (2, 4) columns clamps every index to the border.
  const std::vector<int64_t> padded = ToVector<int64_t>(RunOne(SingleNode("Pad", 13).Attr("mode", std::string("edge"))
                                                                    .Input(x).Input(Int64s({3, 2, 5, 4}))));
  const int64_t out_cols = cols + 6;
  mismatches = 0;
  for (int64_t r = 0; r < rows + 8; ++r) {
    for (int64_t c = 0; c < out_cols; ++c) {
      const int64_t sr = std::min(std::max<int64_t>(r - 3, 0), rows - 1);
      const int64_t sc = std::min(std::max<int64_t>(c - 2, 0), cols - 1);
      mismatches += padded[r * out_cols + c] != values[sr * cols + sc];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(DepthToSpaceTest, ModesMatchTheSpecificationFormula) {
  // N=1, C=8, H=1, W=2, blocksize 2 -> 1x2x2x4.
  const Tensor x = MakeTensor<float>({1, 8, 1, 2}, Iota(16));
  const std::vector<float> dcr = ToVector<float>(RunOne(SingleNode("DepthToSpace", 13).Attr("blocksize", int64_t{2}).Input(x)));
  const std::vector<float> crd = ToVector<float>(RunOne(SingleNode("DepthToSpace", 13).Attr("blocksize", int64_t{2})
                                                            .Attr("mode", std::string("CRD")).Input(x)));
  // out[c][h*2+i][w*2+j] = in[(i*2+j)*2 + c][h][w] (DCR) or in[c*4 + i*2 + j][h][w] (CRD).
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t w = 0; w < 2; ++w) {
        for (int64_t j = 0; j < 2; ++j) {
          const int64_t out = (c * 2 + i) * 4 + w * 2 + j;
          EXPECT_EQ(dcr[out], static_cast<float>(((i * 2 + j) * 2 + c) * 2 + w));
          EXPECT_EQ(crd[out], static_cast<float>((c * 4 + i * 2 + j) * 2 + w));
        }
      }
    }
  }
  // SpaceToDepth inverts DCR.
  const Tensor back = RunOne(SingleNode("SpaceToDepth", 13).Attr("blocksize", int64_t{2})
                                 .Input(MakeTensor<float>({1, 2, 2, 4}, dcr)));
  EXPECT_EQ(ToVector<float>(back), Iota(16));
}

// ---- Generators and selections ------------------------------------------------------

TEST(GeneratorTest, RangeOneHotEyeLikeTriluNonZero) {
  EXPECT_EQ(ToVector<int32_t>(RunOne(SingleNode("Range", 11).Input(MakeTensor<int32_t>({}, {10}))
                                         .Input(MakeTensor<int32_t>({}, {4})).Input(MakeTensor<int32_t>({}, {-3})))),
            (std::vector<int32_t>{10, 7}));
  const Tensor onehot = RunOne(SingleNode("OneHot", 11).Attr("axis", int64_t{0})
                                   .Input(MakeTensor<int64_t>({2}, {-1, 5})).Input(MakeTensor<int64_t>({}, {3}))
                                   .Input(Floats({0, 1})));
  EXPECT_EQ(onehot.shape(), (Shape{3, 2}));
  // Index -1 selects row 2; index 5 is out of range and stays all off.
  EXPECT_EQ(ToVector<float>(onehot), (std::vector<float>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(ToVector<int32_t>(RunOne(SingleNode("EyeLike", 9).Attr("k", int64_t{1})
                                         .Input(MakeTensor<int32_t>({2, 3}, {9, 9, 9, 9, 9, 9})))),
            (std::vector<int32_t>{0, 1, 0, 0, 0, 1}));
  const Tensor m = MakeTensor<float>({3, 3}, Iota(9, 1));
  EXPECT_EQ(ToVector<float>(RunOne(SingleNode("Trilu", 14).Attr("upper", int64_t{0}).Input(m)
                                       .Input(MakeTensor<int64_t>({}, {-1})))),
            (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  const Tensor nz = RunOne(SingleNode("NonZero", 13).Input(MakeTensor<float>({2, 2}, {1, 0, -0.0f, 3})));
  EXPECT_EQ(nz.shape(), (Shape{2, 2}));
  EXPECT_EQ(ToVector<int64_t>(nz), (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(SelectionTest, UniqueSortedAndUnsorted) {
  const Tensor x = MakeTensor<float>({6}, {2, 1, 1, 3, 4, 3});
  Expected<std::vector<Tensor>> sorted = SingleNode("Unique", 11).NumOutputs(4).Input(x).Run();
  ASSERT_TRUE(sorted.ok()) << sorted.status().message();
  EXPECT_EQ(ToVector<float>((*sorted)[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ToVector<int64_t>((*sorted)[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(ToVector<int64_t>((*sorted)[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(ToVector<int64_t>((*sorted)[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  Expected<std::vector<Tensor>> unsorted =
      SingleNode("Unique", 11).Attr("sorted", int64_t{0}).NumOutputs(4).Input(x).Run();
  ASSERT_TRUE(unsorted.ok()) << unsorted.status().message();
  EXPECT_EQ(ToVector<float>((*unsorted)[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(ToVector<int64_t>((*unsorted)[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ToVector<int64_t>((*unsorted)[3]), (std::vector<int64_t>{1, 2, 2, 1}));
}

TEST(DropoutTest, InferenceIsAViewWithAnAllTrueMask) {
  const Tensor x = MakeTensor<float>({3}, {1, 2, 3});
  Expected<std::vector<Tensor>> out = SingleNode("Dropout", 13).NumOutputs(2).Input(x).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  EXPECT_EQ(ToVector<bool>((*out)[1]), (std::vector<bool>{true, true, true}));
}

}  // namespace
}  // namespace onnx_amp::testing
