// Conv and ConvTranspose against double-precision loops written here, hand values from
// the ONNX operator docs, and (ConvTranspose) the adjoint identity
// <Conv(x), y> = <x, ConvTranspose(y)> for the same weights.
//
// Conv's error bound is MatMul's (see linalg_test.cc) with K = C/group * prod(kernel)
// products plus the bias: |out - ref| <= u_low |ref| + (1 + u_low)(K + 3) u32 1.01
// sum |terms| + floor.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "ops/conv/few_channels_conv.h"
#include "tests/ops/dnn_test_util.h"
#include "tests/ops/window_reference.h"

namespace onnx_amp::testing {
namespace {

struct ConvCase {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: default
  std::string auto_pad = "NOTSET";
  bool bias = false;
};

struct Reference {
  Shape shape;
  std::vector<double> value, abs_sum;
  int64_t terms = 0;
};

Reference RefConv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& b) {
  const std::vector<int64_t> kernel(c.w.begin() + 2, c.w.end());
  const Geometry g = Resolve(Shape(c.x.begin() + 2, c.x.end()), kernel, c.strides, c.dilations, c.pads, c.auto_pad);
  const int64_t n_batch = c.x[0], channels = c.x[1], m = c.w[0], cg = channels / c.group, mg = m / c.group;
  const size_t r = g.in.size();
  Reference ref;
  ref.terms = cg * NumElements(kernel) + (c.bias ? 1 : 0);
  ref.shape = {n_batch, m};
  ref.shape.insert(ref.shape.end(), g.out.begin(), g.out.end());
  const int64_t out_size = NumElements(g.out), in_size = NumElements(g.in), k_size = NumElements(kernel);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      for (int64_t o = 0; o < out_size; ++o) {
        std::vector<int64_t> oi(r);
        for (int64_t rest = o, i = r - 1; i >= 0; --i) oi[i] = rest % g.out[i], rest /= g.out[i];
        double sum = c.bias ? b[oc] : 0.0, abs_sum = c.bias ? std::abs(b[oc]) : 0.0;
        for (int64_t ic = 0; ic < cg; ++ic) {
          for (int64_t kk = 0; kk < k_size; ++kk) {
            int64_t offset = 0, rest = kk, div = k_size;
            bool inside = true;
            for (size_t i = 0; i < r; ++i) {
              div /= kernel[i];
              const int64_t ki = rest / div;
              rest %= div;
              const int64_t pos = oi[i] * g.s[i] - g.pb[i] + ki * g.d[i];
              inside = inside && pos >= 0 && pos < g.in[i];
              offset = offset * g.in[i] + pos;
            }
            if (!inside) continue;
            const double term = x[(n * channels + (oc / mg) * cg + ic) * in_size + offset] * w[(oc * cg + ic) * k_size + kk];
            sum += term;
            abs_sum += std::abs(term);
          }
        }
        ref.value.push_back(sum);
        ref.abs_sum.push_back(abs_sum);
      }
    }
  }
  return ref;
}

SingleNode ConvNode(const std::string& op, const ConvCase& c) {
  SingleNode node(op, 18);
  if (c.group != 1) node.Attr("group", c.group);
  if (!c.strides.empty()) node.Attr("strides", c.strides);
  if (!c.dilations.empty()) node.Attr("dilations", c.dilations);
  if (!c.pads.empty()) node.Attr("pads", c.pads);
  if (c.auto_pad != "NOTSET") node.Attr("auto_pad", c.auto_pad);
  return node;
}

// `options` may store X (input 0) and Y channels-last and fold a Relu into the node: the
// reference then takes the Relu of its sums (which moves no value further from them).
void CheckConv(DType dtype, const ConvCase& c, uint32_t seed, const NodeRunOptions& options = {}) {
  const RoundedTensor x = RandomTensor(dtype, c.x, seed), w = RandomTensor(dtype, c.w, seed + 1);
  const RoundedTensor b = RandomTensor(dtype, {c.w[0]}, seed + 2);
  SingleNode node = ConvNode("Conv", c);
  node.Input(options.channels_last_inputs & 1u ? ToChannelsLast(x.tensor) : x.tensor).Input(w.tensor);
  if (c.bias) node.Input(b.tensor);
  Reference ref = RefConv(c, x.values, w.values, b.values);
  const bool relu = options.activation.kind == FusedActivationKind::kRelu;
  if (relu) {
    for (double& v : ref.value) v = std::max(v, 0.0);
  }
  const std::string label = std::string(DTypeName(dtype)) + " conv X" + ShapeToString(c.x) + " W" + ShapeToString(c.w) +
                            " group " + std::to_string(c.group) + " " + c.auto_pad + (relu ? " +Relu" : "");
  auto out = node.Options(options).Run();
  ASSERT_TRUE(out.ok()) << label << ": " << out.status().message();
  const Tensor y = options.channels_last_output ? FromChannelsLast((*out)[0]) : (*out)[0];
  ASSERT_EQ(y.shape(), ref.shape) << label;
  const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
  std::vector<double> bound(ref.value.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    bound[i] = u_low * std::abs(ref.value[i]) + (1 + u_low) * (ref.terms + 3) * kUnitF32 * 1.01 * ref.abs_sum[i] +
               AbsoluteFloor(dtype);
  }
  ExpectWithin(ToDoubles(y), ref.value, bound, label);
}

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 7}, {4, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", true},
    {{1, 2, 9, 8}, {3, 2, 3, 2}, 1, {2, 2}, {2, 1}, {0, 1, 1, 0}, "NOTSET", false},
    {{2, 4, 6, 6}, {6, 2, 3, 3}, 2, {1, 2}, {}, {1, 0, 1, 2}, "NOTSET", true},
    {{1, 8, 10, 10}, {8, 1, 3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, "NOTSET", true},  // depthwise
    {{2, 2, 11}, {3, 2, 4}, 1, {3}, {}, {}, "SAME_UPPER", true},                     // 1-D
    {{1, 3, 8, 7}, {2, 3, 2, 2}, 1, {2, 2}, {}, {}, "SAME_LOWER", false},
    {{1, 2, 9, 9}, {2, 2, 3, 3}, 1, {2, 2}, {2, 2}, {}, "VALID", true},
    {{1, 2, 5, 6, 5}, {2, 2, 2, 3, 3}, 1, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}, "NOTSET", true},  // 3-D
    {{1, 64, 6, 6}, {16, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", false},                   // K = 576
};

TEST(ConvTest, Float32MatchesDoubleReference) {
  uint32_t seed = 1000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kFloat32, c, seed += 3);
}

TEST(ConvTest, Float16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 2000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 3000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16NativeKernelsRoundOnce) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  uint32_t seed = 3100;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16Float32KernelsRoundOnce) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  uint32_t seed = 3200;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

// A float16/bfloat16 first layer (1 to 3 channels, at most 27 weights per map, 12 on
// AVX2, Y channels-last with 16 or 32 maps), and a float32 one on AVX2, runs on a loop of its own
// (few_channels_conv.h): within the same bound, X in either order, with and without
// bias, pads, strides, dilations, 4 channels and a 5 x 5 window, rows that leave a part group of 8
// pixels, and a folded Relu applied to the rounded values. A case the path does not take
// runs on oneDNN and is checked all the same.
void CheckFirstLayerLoop(FewChannelsPath path, uint32_t seed) {
  const ScopedFewChannelsPath scoped(path);
  const ConvCase cases[] = {
      {{3, 1, 12, 12}, {16, 1, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", true},
      {{2, 3, 11, 9}, {32, 3, 3, 3}, 1, {2, 2}, {}, {1, 0, 1, 2}, "NOTSET", true},
      {{2, 2, 10, 13}, {16, 2, 2, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}, "NOTSET", false},
      {{1, 1, 9, 9}, {16, 1, 5, 5}, 1, {}, {}, {2, 2, 2, 2}, "NOTSET", true},
      {{2, 4, 9, 10}, {32, 4, 1, 3}, 1, {1, 2}, {}, {0, 1, 0, 1}, "NOTSET", true},
  };
  const bool avx2 = path == FewChannelsPath::kAvx2;
  const int64_t max_taps = avx2 ? kMaxFewChannelsTapsAvx2 : kMaxFewChannelsTaps;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvCase& c : cases) {
      WindowGeometry g;
      g.in = {c.x[2], c.x[3]};
      g.kernel = {c.w[2], c.w[3]};
      EXPECT_EQ(TakesFewChannelsConv(dtype, c.x, c.w, 1, true, g),
                c.w[1] * c.w[2] * c.w[3] <= max_taps && (dtype != DType::kFloat32 || avx2));
      for (const uint32_t x_last : {0u, 1u}) {
        for (const bool relu : {false, true}) {
          NodeRunOptions options;
          options.channels_last_inputs = x_last;
          options.channels_last_output = true;
          if (relu) options.activation.kind = FusedActivationKind::kRelu;
          CheckConv(dtype, c, seed += 3, options);
        }
      }
    }
  }
  // Everything else stays on oneDNN: float32 beside AVX-512, a Y stored NCHW, groups, maps
  // not a multiple of 16, more than 4 channels, more than 27 weights per map (ResNet's
  // 7 x 7 stem).
  WindowGeometry g3;
  g3.in = {12, 12};
  g3.kernel = {3, 3};
  EXPECT_EQ(TakesFewChannelsConv(DType::kFloat32, {2, 1, 12, 12}, {16, 1, 3, 3}, 1, true, g3), avx2);
  EXPECT_FALSE(TakesFewChannelsConv(DType::kBFloat16, {2, 1, 12, 12}, {16, 1, 3, 3}, 1, false, g3));
  EXPECT_FALSE(TakesFewChannelsConv(DType::kBFloat16, {2, 2, 12, 12}, {16, 1, 3, 3}, 2, true, g3));
  EXPECT_FALSE(TakesFewChannelsConv(DType::kBFloat16, {2, 1, 12, 12}, {24, 1, 3, 3}, 1, true, g3));
  WindowGeometry g1 = g3;
  g1.kernel = {1, 1};
  EXPECT_FALSE(TakesFewChannelsConv(DType::kFloat16, {2, 5, 12, 12}, {16, 5, 1, 1}, 1, true, g1));
  WindowGeometry g7 = g3;
  g7.kernel = {7, 7};
  EXPECT_FALSE(TakesFewChannelsConv(DType::kFloat16, {2, 3, 12, 12}, {64, 3, 7, 7}, 1, true, g7));
}

TEST(ConvTest, FirstLayerLoopOnAvx512MatchesDoubleReference) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  CheckFirstLayerLoop(FewChannelsPath::kAvx512, 1300);
}

TEST(ConvTest, FirstLayerLoopOnAvx2MatchesDoubleReference) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 with FMA and F16C";
  CheckFirstLayerLoop(FewChannelsPath::kAvx2, 1400);
}

// With a 2x2 max pool folded in (KernelContext::pools_output), the loop rounds, applies
// Relu and pools each pair of rows in registers (another activation goes through the
// stored rows): the bits of the unpooled loop's Y pooled by the MaxPool node, for no
// activation, Relu and a LeakyRelu; pooled rows of 7 (tiles of 4, 2 and 1 on AVX-512, 2
// and 1 on AVX2) and odd heights; NaN, infinities and signed zeros in X; and, scaled down,
// sums that float16 rounds to zeros of either sign, which the pool's order tells apart.
void CheckPooledFirstLayerLoop(FewChannelsPath path, uint32_t seed) {
  const ScopedFewChannelsPath scoped(path);
  const ConvCase cases[] = {
      {{3, 1, 13, 15}, {16, 1, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", true},
      {{2, 2, 11, 14}, {32, 2, 2, 3}, 1, {}, {}, {1, 1, 0, 1}, "NOTSET", false},
  };
  const FusedActivationKind activations[] = {FusedActivationKind::kNone, FusedActivationKind::kRelu,
                                             FusedActivationKind::kLeakyRelu};
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvCase& c : cases) {
      for (const double scale : {1.0, 1e-4}) {
        std::vector<double> x_values = RandomValues(static_cast<size_t>(NumElements(c.x)), seed += 3);
        const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(), 0.0, -0.0};
        for (size_t i = 0; i < x_values.size(); ++i) x_values[i] = i % 37 == 5 ? specials[i / 37 % 5] : x_values[i] * scale;
        const Tensor x = MakeFloatTensor(dtype, c.x, x_values);
        const RoundedTensor w = RandomTensor(dtype, c.w, seed + 1, -0.5 * scale, 0.5 * scale);
        const RoundedTensor b = RandomTensor(dtype, {c.w[0]}, seed + 2, -0.5, 0.5);
        for (const FusedActivationKind kind : activations) {
          const std::string label = std::string(DTypeName(dtype)) + " " + ShapeToString(c.x) + " activation " +
                                    std::to_string(static_cast<int>(kind)) + " scale " + std::to_string(scale);
          Tensor ys[2];
          for (const bool pooled : {false, true}) {
            NodeRunOptions options;
            options.channels_last_output = true;
            options.pools_output = pooled;
            options.activation.kind = kind;
            options.activation.alpha = 0.1f;
            SingleNode node("Conv");
            node.Attr("pads", c.pads).Input(x).Input(w.tensor);
            if (c.bias) node.Input(b.tensor);
            auto out = node.Options(options).Run();
            ASSERT_TRUE(out.ok()) << label << ": " << out.status().message();
            ys[pooled] = FromChannelsLast((*out)[0]);
          }
          SingleNode pool("MaxPool", 17);
          pool.Attr("kernel_shape", std::vector<int64_t>{2, 2}).Attr("strides", std::vector<int64_t>{2, 2});
          auto expected = pool.Input(ys[0]).Run();
          ASSERT_TRUE(expected.ok()) << label << ": " << expected.status().message();
          const Tensor& want = (*expected)[0];
          ASSERT_EQ(ys[1].shape(), want.shape()) << label;
          const std::vector<double> got = ToDoubles(ys[1]);
          EXPECT_TRUE(std::any_of(got.begin(), got.end(), [](double v) { return std::isnan(v); })) << label;
          const size_t bytes = DTypeSize(dtype);
          for (int64_t i = 0; i < want.num_elements(); ++i) {
            ASSERT_EQ(std::memcmp(static_cast<const char*>(ys[1].raw_data()) + i * bytes,
                                  static_cast<const char*>(want.raw_data()) + i * bytes, bytes),
                      0)
                << label << ": element " << i << " is " << got[i] << ", the separate pool gives " << ToDoubles(want)[i];
          }
        }
      }
    }
  }
}

TEST(ConvTest, FirstLayerLoopOnAvx512PoolsAsTheMaxPoolNode) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  CheckPooledFirstLayerLoop(FewChannelsPath::kAvx512, 1700);
}

TEST(ConvTest, FirstLayerLoopOnAvx2PoolsAsTheMaxPoolNode) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 with FMA and F16C";
  CheckPooledFirstLayerLoop(FewChannelsPath::kAvx2, 1800);
}

// The loops sum each output in the order of oneDNN's direct kernel for the same
// instruction set (few_channels_conv.h), so a Y stored channels-last (the loops) and one
// stored NCHW (oneDNN, on float32 operands widened exactly) get the same bits: checked on
// the widest path, the one matching oneDNN's kernels here (a run held to AVX2 checks that
// path), with one channel and with three, with and without bias.
TEST(ConvTest, FirstLayerLoopGivesTheBitsOfOneDnnsDirectKernel) {
  const FewChannelsPath path = CurrentFewChannelsPath();
  if (path == FewChannelsPath::kNone) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA and F16C";
  const ScopedBf16Kernels float32_products(Bf16Kernels::kFloat32);  // oneDNN's native ones sum in pairs
  uint32_t seed = 1500;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const int64_t channels : {int64_t{1}, int64_t{3}}) {
      for (const bool bias : {true, false}) {
        const RoundedTensor x = RandomTensor(dtype, {2, channels, 12, 11}, seed += 3);
        const RoundedTensor w = RandomTensor(dtype, {32, channels, 3, 3}, seed + 1);
        const RoundedTensor b = RandomTensor(dtype, {32}, seed + 2);
        WindowGeometry g;
        g.in = {12, 11};
        g.kernel = {3, 3};
        if (!TakesFewChannelsConv(dtype, x.tensor.shape(), w.tensor.shape(), 1, true, g)) continue;
        std::vector<double> outputs[2];
        for (const bool loops : {false, true}) {
          NodeRunOptions options;
          options.channels_last_output = loops;
          SingleNode node("Conv");
          node.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Input(x.tensor).Input(w.tensor);
          if (bias) node.Input(b.tensor);
          auto out = node.Options(options).Run();
          ASSERT_TRUE(out.ok()) << out.status().message();
          outputs[loops] = ToDoubles(loops ? FromChannelsLast((*out)[0]) : (*out)[0]);
        }
        EXPECT_EQ(outputs[0], outputs[1]) << DTypeName(dtype) << ", " << channels << " channels, bias " << bias;
      }
    }
  }
}

TEST(ConvTest, Float64MatchesDoubleReference) {
  uint32_t seed = 4000;
  for (const ConvCase& c : kConvCases) {
    const RoundedTensor x = RandomTensor(DType::kFloat64, c.x, seed += 3), w = RandomTensor(DType::kFloat64, c.w, seed + 1);
    const RoundedTensor b = RandomTensor(DType::kFloat64, {c.w[0]}, seed + 2);
    SingleNode node = ConvNode("Conv", c);
    node.Input(x.tensor).Input(w.tensor);
    if (c.bias) node.Input(b.tensor);
    const Reference ref = RefConv(c, x.values, w.values, b.values);
    auto out = node.Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<double> bound(ref.value.size());
    for (size_t i = 0; i < bound.size(); ++i) bound[i] = (ref.terms + 1) * 0x1p-53 * 1.01 * ref.abs_sum[i];
    ExpectWithin(ToDoubles((*out)[0]), ref.value, bound, "float64 conv " + ShapeToString(c.x));
  }
}

TEST(ConvTest, Float16OutputOverflowIsInf) {
  // 3 taps of 30000 * 1 = 90000 > 65504; each tap alone fits.
  const Tensor x = MakeFloatTensor(DType::kFloat16, {1, 1, 3}, {30000, 30000, 30000});
  const Tensor w = MakeFloatTensor(DType::kFloat16, {2, 1, 3}, {1, 1, 1, 1, -1, 0});
  auto out = SingleNode("Conv").Input(x).Input(w).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<double> y = ToDoubles((*out)[0]);
  EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[1], 0.0);
}

TEST(ConvTest, RejectsChannelMismatch) {
  auto out = SingleNode("Conv")
                 .Input(MakeFloatTensor(DType::kFloat32, {1, 3, 4, 4}, std::vector<double>(48, 1.0)))
                 .Input(MakeFloatTensor(DType::kFloat32, {2, 2, 3, 3}, std::vector<double>(36, 1.0)))
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidModel);
}

TEST(ConvTransposeTest, MatchesOnnxDocExample) {
  // ONNX ConvTranspose doc example: X = 0..8 (3x3), W = ones (1x2x3x3).
  std::vector<double> xv(9);
  for (int i = 0; i < 9; ++i) xv[i] = i;
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 1, 3, 3}, xv);
  const Tensor w = MakeFloatTensor(DType::kFloat32, {1, 2, 3, 3}, std::vector<double>(18, 1.0));
  auto out = SingleNode("ConvTranspose").Input(x).Input(w).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].shape(), (Shape{1, 2, 5, 5}));
  const std::vector<double> plane = {0, 1, 3,  3,  2,  3, 8,  15, 12, 7,  9, 21, 36,
                                     27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<double> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  EXPECT_EQ(ToDoubles((*out)[0]), want);
}

TEST(ConvTransposeTest, IsTheAdjointOfConv) {
  const std::vector<ConvCase> cases = {
      {{1, 2, 7, 7}, {3, 2, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}},
      {{2, 4, 8, 9}, {6, 2, 3, 2}, 2, {2, 3}, {1, 2}, {1, 0, 2, 1}},
      {{1, 3, 10}, {3, 1, 4}, 3, {3}, {2}, {2, 1}},
      {{1, 2, 4, 5, 4}, {2, 2, 2, 2, 3}, 1, {2, 1, 2}, {}, {0, 1, 1, 1, 0, 0}},
  };
  uint32_t seed = 5000;
  for (const ConvCase& c : cases) {
    const RoundedTensor x = RandomTensor(DType::kFloat64, c.x, seed += 3), w = RandomTensor(DType::kFloat64, c.w, seed + 1);
    auto y = ConvNode("Conv", c).Input(x.tensor).Input(w.tensor).Run();
    ASSERT_TRUE(y.ok()) << y.status().message();
    const RoundedTensor v = RandomTensor(DType::kFloat64, (*y)[0].shape(), seed + 2);
    SingleNode transpose = ConvNode("ConvTranspose", c);
    transpose.Attr("output_shape", std::vector<int64_t>(c.x.begin() + 2, c.x.end()));
    auto xt = transpose.Input(v.tensor).Input(w.tensor).Run();
    ASSERT_TRUE(xt.ok()) << xt.status().message();
    ASSERT_EQ((*xt)[0].shape(), c.x);
    const std::vector<double> conv_x = ToDoubles((*y)[0]), transpose_v = ToDoubles((*xt)[0]);
    double lhs = 0, rhs = 0, scale = 0;
    for (size_t i = 0; i < conv_x.size(); ++i) lhs += conv_x[i] * v.values[i], scale += std::abs(conv_x[i] * v.values[i]);
    for (size_t i = 0; i < transpose_v.size(); ++i) rhs += x.values[i] * transpose_v[i];
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + scale)) << "X" << ShapeToString(c.x);
  }
}

TEST(ConvTransposeTest, LowPrecisionMatchesRoundedFloat64) {
  // The same problem in float64 on the rounded inputs, rounded once, within the bound.
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    ConvCase c{{1, 4, 5, 5}, {4, 3, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}};
    const RoundedTensor x = RandomTensor(dtype, c.x, 17), w = RandomTensor(dtype, c.w, 18);
    auto low = ConvNode("ConvTranspose", c).Input(x.tensor).Input(w.tensor).Run();
    auto ref = ConvNode("ConvTranspose", c)
                   .Input(MakeFloatTensor(DType::kFloat64, c.x, x.values))
                   .Input(MakeFloatTensor(DType::kFloat64, c.w, w.values))
                   .Run();
    ASSERT_TRUE(low.ok() && ref.ok());
    const std::vector<double> want = ToDoubles((*ref)[0]);
    // Each output sums at most C * prod(kernel) = 36 terms of magnitude <= 1.
    std::vector<double> bound(want.size());
    for (size_t i = 0; i < want.size(); ++i) bound[i] = UnitRoundoff(dtype) * std::abs(want[i]) + 2 * 39 * kUnitF32 * 36;
    ExpectWithin(ToDoubles((*low)[0]), want, bound, std::string(DTypeName(dtype)) + " ConvTranspose");
  }
}

}  // namespace
}  // namespace onnx_amp::testing
