// The kernels a training plan runs on channels-last values (runtime/executor/plan_layouts.h)
// against themselves on NCHW values: BatchNormalization, BatchNormalizationGrad, MaxPool
// and MaxPoolGrad give the same bits in both orders (their sums keep their order, their
// window rule its picks), ConvGrad the same numbers within float32 rounding of its sums
// (oneDNN's kernels for the two layouts add in different orders). The inputs carry NaN,
// infinities, ties and signed zeros; channel counts of 16, 32 and others; float32,
// float16 and bfloat16. The 2x2 max pool's row kernel, which the first-layer loops pool
// with, gives the MaxPool node's bits too.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/onnx_domain.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::string Name(DType dtype) { return std::string(DTypeName(dtype)); }

// Values in [-2, 2) with NaN, +-inf and signed zeros at a few positions.
Tensor SpecialTensor(DType dtype, const Shape& shape, uint32_t seed, bool specials = true) {
  std::vector<double> values = RandomValues(static_cast<size_t>(NumElements(shape)), seed, -2.0, 2.0);
  const double kSpecials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 0.0, -0.0};
  for (size_t i = 0; specials && i < values.size(); i += 37) values[i] = kSpecials[(i / 37) % 5];
  return MakeFloatTensor(dtype, shape, values);
}

// Values on a grid of quarters in [-1, 1]: many ties inside each pool window.
Tensor TiedTensor(DType dtype, const Shape& shape, uint32_t seed) {
  std::vector<double> values = RandomValues(static_cast<size_t>(NumElements(shape)), seed, -1.0, 1.0);
  for (double& v : values) v = std::round(v * 4.0) / 4.0;
  values[3] = std::numeric_limits<double>::quiet_NaN();
  values[values.size() / 2] = -0.0;
  return MakeFloatTensor(dtype, shape, values);
}

Tensor ChannelParameter(int64_t channels, uint32_t seed, double lo, double hi) {
  return MakeFloatTensor(DType::kFloat32, {channels}, RandomValues(static_cast<size_t>(channels), seed, lo, hi));
}

// The same bits in every element, but for NaN's payload and sign: NaN + NaN returns one
// operand's, which the compiler's operand order picks.
void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& label) {
  ASSERT_EQ(a.dtype(), b.dtype()) << label;
  ASSERT_EQ(a.shape(), b.shape()) << label;
  const std::vector<double> x = ToDoubles(a), y = ToDoubles(b);
  size_t differences = 0, first = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool same = (std::isnan(x[i]) && std::isnan(y[i])) || std::memcmp(&x[i], &y[i], sizeof(double)) == 0;
    if (!same && differences++ == 0) first = i;
  }
  EXPECT_EQ(differences, 0u) << label << ": first at " << first << ", " << x[first] << " against " << y[first];
}

// Runs `node` on NCHW inputs and again with inputs `channels_last_inputs` (bits) and,
// with `output_channels_last`, output 0 stored channels-last; returns both runs'
// outputs, output 0 of the second back in NCHW order.
struct BothOrders {
  std::vector<Tensor> nchw, channels_last;
};

BothOrders RunBothOrders(SingleNode node, uint32_t channels_last_inputs, NodeRunOptions options = {},
                         bool output_channels_last = true) {
  BothOrders runs;
  Expected<std::vector<Tensor>> nchw = node.Options(options).Run();
  EXPECT_TRUE(nchw.ok()) << nchw.status().message();
  if (!nchw.ok()) return runs;
  runs.nchw = std::move(*nchw);
  SingleNode reordered(node.node().op_type(), node.opset(), node.node().domain());
  reordered.node() = node.node();
  reordered.node().clear_input();
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Tensor& input = node.inputs()[i];
    reordered.Input((channels_last_inputs >> i) & 1u ? ToChannelsLast(input) : input);
  }
  options.channels_last_inputs = channels_last_inputs;
  options.channels_last_output = output_channels_last;
  Expected<std::vector<Tensor>> last = reordered.Options(options).Run();
  EXPECT_TRUE(last.ok()) << last.status().message();
  if (!last.ok()) return runs;
  runs.channels_last = std::move(*last);
  if (output_channels_last) runs.channels_last[0] = FromChannelsLast(runs.channels_last[0]);
  return runs;
}

// {37, 16, 6, 6}: runs of two and three images (lane_sums.h), summed on both threads.
const Shape kNormShapes[] = {{2, 3, 5, 5}, {3, 20, 13, 13}, {2, 16, 28, 28}, {1, 32, 7, 7}, {37, 16, 6, 6}};

TEST(ChannelsLastKernelsTest, BatchNormalizationGivesTheNchwBits) {
  const FusedActivation activations[] = {{}, {FusedActivationKind::kRelu}, {FusedActivationKind::kLeakyRelu, 0.1f}};
  for (DType dtype : kDtypes) {
    for (const Shape& shape : kNormShapes) {
      for (int training = 0; training <= 1; ++training) {
        for (const FusedActivation& activation : activations) {
          const int64_t c = shape[1];
          SingleNode node("BatchNormalization", 15);
          node.Attr("epsilon", 1e-3f).Attr("momentum", 0.8f).Attr("training_mode", int64_t{training});
          node.Input(SpecialTensor(dtype, shape, 1, /*specials=*/!training))
              .Input(ChannelParameter(c, 2, 0.5, 1.5))
              .Input(ChannelParameter(c, 3, -0.5, 0.5))
              .Input(ChannelParameter(c, 4, -0.5, 0.5))
              .Input(ChannelParameter(c, 5, 0.5, 2.0))
              .NumOutputs(training ? 3 : 1);
          const std::string label = Name(dtype) + " " + ShapeToString(shape) + " training " +
                                    std::to_string(training) + " activation " +
                                    std::to_string(static_cast<int>(activation.kind));
          const BothOrders runs = RunBothOrders(node, 1u << 0, {.activation = activation});
          ASSERT_EQ(runs.channels_last.size(), runs.nchw.size()) << label;
          for (size_t i = 0; i < runs.nchw.size(); ++i) {
            ExpectSameBits(runs.channels_last[i], runs.nchw[i], label + " output " + std::to_string(i));
          }
        }
      }
    }
  }
}

// The sums' order depends on the batch size alone: one thread or two, either layout,
// the same bits.
TEST(ChannelsLastKernelsTest, BatchNormalizationGradSumsTheSameOnOneThreadAsOnTwo) {
  const Shape shape = {37, 16, 6, 6};
  SingleNode node("BatchNormalizationGrad", 17, std::string(kOnnxAmpDomain));
  node.Attr("epsilon", 1e-3f).Attr("training_mode", int64_t{1});
  node.Input(SpecialTensor(DType::kFloat32, shape, 11, /*specials=*/false))
      .Input(SpecialTensor(DType::kFloat32, shape, 12, /*specials=*/false))
      .Input(ChannelParameter(16, 8, 0.5, 1.5))
      .Input(ChannelParameter(16, 9, -0.5, 0.5))
      .Input(ChannelParameter(16, 10, 0.5, 2.0))
      .NumOutputs(3);
  const BothOrders two = RunBothOrders(node, 0b11, {.threads = 2});
  const BothOrders one = RunBothOrders(node, 0b11, {.threads = 1});
  ASSERT_EQ(two.nchw.size(), 3u);
  ASSERT_EQ(one.channels_last.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string label = "output " + std::to_string(i);
    ExpectSameBits(one.nchw[i], two.nchw[i], "NCHW " + label);
    ExpectSameBits(one.channels_last[i], two.channels_last[i], "channels-last " + label);
    ExpectSameBits(one.channels_last[i], one.nchw[i], "one thread " + label);
  }
}

TEST(ChannelsLastKernelsTest, BatchNormalizationGradGivesTheNchwBits) {
  for (DType dtype : kDtypes) {
    for (const Shape& shape : kNormShapes) {
      for (int training = 0; training <= 1; ++training) {
        const int64_t c = shape[1];
        SingleNode node("BatchNormalizationGrad", 17, std::string(kOnnxAmpDomain));
        node.Attr("epsilon", 1e-3f).Attr("training_mode", int64_t{training});
        node.Input(SpecialTensor(dtype, shape, 6, /*specials=*/!training))
            .Input(SpecialTensor(dtype, shape, 7, /*specials=*/false))
            .Input(ChannelParameter(c, 8, 0.5, 1.5))
            .Input(ChannelParameter(c, 9, -0.5, 0.5))
            .Input(ChannelParameter(c, 10, 0.5, 2.0))
            .NumOutputs(3);
        const std::string label = Name(dtype) + " " + ShapeToString(shape) + " training " + std::to_string(training);
        const BothOrders runs = RunBothOrders(node, (1u << 0) | (1u << 1));
        ASSERT_EQ(runs.channels_last.size(), 3u) << label;
        for (size_t i = 0; i < 3; ++i) {
          ExpectSameBits(runs.channels_last[i], runs.nchw[i], label + " output " + std::to_string(i));
        }
      }
    }
  }
}

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, strides, pads;
  int64_t ceil_mode = 0;
};

// Y of a pool case, from ONNX's output size rule.
Shape PooledShape(const PoolCase& pool) {
  Shape y = pool.x;
  for (size_t axis = 0; axis < 2; ++axis) {
    const int64_t span = pool.x[2 + axis] + pool.pads[axis] + pool.pads[2 + axis] - pool.kernel[axis];
    y[2 + axis] = (pool.ceil_mode ? (span + pool.strides[axis] - 1) : span) / pool.strides[axis] + 1;
  }
  return y;
}

// The pool kernels to run: the portable loops, and the AVX-512 ones where the CPU has them.
std::vector<bool> Pool2x2Choices() {
  std::vector<bool> avx512_choices = {false};
  if (Pool2x2UsesAvx512()) avx512_choices.push_back(true);
  return avx512_choices;
}

SingleNode PoolNode(const std::string& op_type, const std::string& domain, const PoolCase& pool) {
  SingleNode node(op_type, 17, domain);
  node.Attr("kernel_shape", pool.kernel).Attr("strides", pool.strides).Attr("pads", pool.pads);
  node.Attr("ceil_mode", pool.ceil_mode);
  return node;
}

TEST(ChannelsLastKernelsTest, MaxPoolGivesTheNchwBits) {
  const PoolCase cases[] = {
      {{2, 16, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}},     // tiles: the CNNs' pools
      {{3, 32, 6, 10}, {2, 2}, {2, 2}, {0, 0, 0, 0}},    // tiles, two blocks of 16 channels
      {{2, 20, 6, 10}, {2, 2}, {2, 2}, {0, 0, 0, 0}},    // tiles, channels past a multiple of 16
      {{2, 16, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1},  // overlapping, padded, ceil mode
  };
  for (bool avx512 : Pool2x2Choices()) {
    const ScopedPool2x2Avx512 pool_kernels(avx512);
    for (DType dtype : kDtypes) {
      for (const PoolCase& pool : cases) {
        for (int y_last = 0; y_last <= 1; ++y_last) {
          for (int tied = 0; tied <= 1; ++tied) {
            SingleNode node = PoolNode("MaxPool", "", pool);
            node.Input(tied ? TiedTensor(dtype, pool.x, 16) : SpecialTensor(dtype, pool.x, 17));
            const std::string label = Name(dtype) + " " + ShapeToString(pool.x) + " kernel " +
                                      std::to_string(pool.kernel[0]) + " Y channels-last " + std::to_string(y_last) +
                                      " tied " + std::to_string(tied) + " avx512 " + std::to_string(avx512);
            const BothOrders runs = RunBothOrders(node, 1u << 0, {}, y_last != 0);
            ASSERT_EQ(runs.channels_last.size(), 1u) << label;
            EXPECT_EQ(runs.channels_last[0].shape(), PooledShape(pool)) << label;
            ExpectSameBits(runs.channels_last[0], runs.nchw[0], label);
          }
        }
      }
    }
  }
}

// MaxPool2x2RowChannelsLast, the row kernel a first layer's loops pool their rows with
// (few_channels_conv.h), gives the MaxPool node's bits on the same two rows: on the
// AVX-512, AVX2 and portable kernels (5 channels: no whole block of 8 or 16).
TEST(ChannelsLastKernelsTest, MaxPool2x2RowGivesTheMaxPoolsBits) {
  constexpr int64_t kOutW = 5, kInW = 2 * kOutW;
  for (bool avx512 : Pool2x2Choices()) {
    for (DType dtype : kDtypes) {
      for (const int64_t channels : {int64_t{5}, int64_t{16}, int64_t{24}}) {
        for (int tied = 0; tied <= 1; ++tied) {
          const PoolCase pool{{1, channels, 2, kInW}, {2, 2}, {2, 2}, {0, 0, 0, 0}};
          const Tensor x = tied ? TiedTensor(dtype, pool.x, 18) : SpecialTensor(dtype, pool.x, 19);
          SingleNode node = PoolNode("MaxPool", "", pool);
          auto out = node.Input(x).Run();
          ASSERT_TRUE(out.ok()) << out.status().message();
          const size_t bytes = DTypeSize(dtype);
          const char* nchw = static_cast<const char*>(x.raw_data());
          std::vector<char> rows(static_cast<size_t>(2 * kInW * channels) * bytes);
          for (int64_t r = 0; r < 2; ++r) {
            for (int64_t col = 0; col < kInW; ++col) {
              for (int64_t c = 0; c < channels; ++c) {
                std::memcpy(rows.data() + static_cast<size_t>((r * kInW + col) * channels + c) * bytes,
                            nchw + static_cast<size_t>((c * 2 + r) * kInW + col) * bytes, bytes);
              }
            }
          }
          std::vector<char> pooled(static_cast<size_t>(kOutW * channels) * bytes);
          MaxPool2x2RowChannelsLast(dtype, avx512, rows.data(), rows.data() + static_cast<size_t>(kInW * channels) * bytes,
                                    kOutW, channels, pooled.data());
          const char* expected = static_cast<const char*>((*out)[0].raw_data());
          for (int64_t ow = 0; ow < kOutW; ++ow) {
            for (int64_t c = 0; c < channels; ++c) {
              EXPECT_EQ(std::memcmp(pooled.data() + static_cast<size_t>(ow * channels + c) * bytes,
                                    expected + static_cast<size_t>(c * kOutW + ow) * bytes, bytes),
                        0)
                  << Name(dtype) << " " << channels << " channels, avx512 " << avx512 << " tied " << tied
                  << ": output " << ow << " channel " << c;
            }
          }
        }
      }
    }
  }
}

TEST(ChannelsLastKernelsTest, MaxPoolGradGivesTheNchwBits) {
  const PoolCase cases[] = {
      {{2, 16, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}},       // tiles: the CNNs' pools
      {{2, 20, 6, 10}, {2, 2}, {2, 2}, {0, 0, 0, 0}},      // tiles, channels past a multiple of 16
      {{2, 20, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1},    // overlapping, padded, ceil mode
      {{1, 3, 5, 5}, {2, 2}, {1, 1}, {0, 0, 0, 0}},        // overlapping, few channels
  };
  for (bool avx512 : Pool2x2Choices()) {
    const ScopedPool2x2Avx512 pool_kernels(avx512);
    for (DType dtype : kDtypes) {
      for (const PoolCase& pool : cases) {
        for (int relu = 0; relu <= 1; ++relu) {
          for (int dy_last = 0; dy_last <= 1; ++dy_last) {
            const Shape y = PooledShape(pool);
            SingleNode node = PoolNode("MaxPoolGrad", std::string(kOnnxAmpDomain), pool);
            node.Input(SpecialTensor(dtype, y, 11)).Input(TiedTensor(dtype, pool.x, 12));
            const std::string label = Name(dtype) + " " + ShapeToString(pool.x) + " kernel " +
                                      std::to_string(pool.kernel[0]) + " relu " + std::to_string(relu) +
                                      " dY channels-last " + std::to_string(dy_last) + " avx512 " +
                                      std::to_string(avx512);
            const BothOrders runs =
                RunBothOrders(node, (1u << 1) | (dy_last ? 1u : 0u), {.fused_relu_grad = relu != 0});
            ASSERT_EQ(runs.channels_last.size(), 1u) << label;
            ExpectSameBits(runs.channels_last[0], runs.nchw[0], label);
          }
        }
      }
    }
  }
}

struct ConvCase {
  Shape x, w;
  int64_t stride = 1;
};

TEST(ChannelsLastKernelsTest, ConvGradMatchesNchwInEveryLayoutMix) {
  const ConvCase cases[] = {
      {{2, 16, 10, 10}, {32, 16, 3, 3}},  // 16 channels in, 32 out: channels-last descriptors
      {{2, 1, 12, 12}, {16, 1, 3, 3}},    // a first layer: 16-channel dY and dX as blocked
      {{2, 20, 7, 7}, {24, 20, 3, 3}, 2}, // channels not a multiple of 16, stride 2
  };
  // (dY, X, dX) channels-last.
  const int layouts[][3] = {{1, 1, 1}, {1, 0, 1}, {0, 1, 0}, {1, 0, 0}, {0, 0, 1}};
  for (DType dtype : kDtypes) {
    for (const ConvCase& conv : cases) {
      Shape y = {conv.x[0], conv.w[0], 0, 0};
      for (size_t axis = 2; axis < 4; ++axis) y[axis] = (conv.x[axis] + 2 - 3) / conv.stride + 1;
      for (const auto& layout : layouts) {
        SingleNode node("ConvGrad", 17, std::string(kOnnxAmpDomain));
        node.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Attr("strides", std::vector<int64_t>{conv.stride, conv.stride});
        node.Input(RandomTensor(dtype, y, 13).tensor)
            .Input(RandomTensor(dtype, conv.x, 14).tensor)
            .Input(RandomTensor(dtype, conv.w, 15, -0.3, 0.3).tensor)
            .NumOutputs(3);
        const std::string label = Name(dtype) + " " + ShapeToString(conv.x) + " dY/X/dX channels-last " +
                                  std::to_string(layout[0]) + std::to_string(layout[1]) + std::to_string(layout[2]);
        const uint32_t inputs = (layout[0] ? 1u : 0u) | (layout[1] ? 2u : 0u);
        const BothOrders runs = RunBothOrders(node, inputs, {}, layout[2] != 0);
        ASSERT_EQ(runs.channels_last.size(), 3u) << label;
        // Each gradient element sums at most K products; oneDNN adds them in another
        // order per layout: within 2 K u32 of the largest gradient, plus a rounding of
        // the dtype.
        for (size_t i = 0; i < 3; ++i) {
          const std::vector<double> a = ToDoubles(runs.channels_last[i]), b = ToDoubles(runs.nchw[i]);
          double largest = 0.0;
          for (double v : b) largest = std::max(largest, std::abs(v));
          const double terms = static_cast<double>(NumElements(y) / y[1] * conv.w[1] * 9);
          const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
          std::vector<double> bound(b.size());
          for (size_t j = 0; j < b.size(); ++j) bound[j] = 2 * u_low * std::abs(b[j]) + 2 * terms * kUnitF32 * largest;
          ExpectWithin(a, b, bound, label + " output " + std::to_string(i));
        }
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp::testing
