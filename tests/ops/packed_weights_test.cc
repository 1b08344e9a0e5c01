// Constant weights reordered once into a primitive's layout (dnn::ResolveWeights): the
// packed copy holds the reordered values, is made once per key, and a large one starts
// on a 2 MiB boundary so that it can sit on huge pages (unless ONNX_AMP_HUGE_PAGES=0).
// bfloat16 weights packed on every call (ops/common/bf16_weight_pack.h) hold the bits
// oneDNN's own reorder writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "ops/common/bf16_weight_pack.h"
#include "ops/common/onednn_utils.h"
#include "runtime/exec/thread_pool.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp {
namespace {

bool HugePagesOff() {
  const char* value = std::getenv("ONNX_AMP_HUGE_PAGES");
  return value != nullptr && std::string_view(value) == "0";
}

// Packs a rows x cols row-major float32 weight into the column-major layout `ba`.
void ExpectPackedTransposed(int64_t rows, int64_t cols, size_t alignment) {
  std::vector<float> plain(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<float>(i % 1021) - 510.0f;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc plain_md({rows, cols}, dnnl::memory::data_type::f32, tag::ab);
  dnn::Primitive primitive;
  primitive.weights_md = dnnl::memory::desc({rows, cols}, dnnl::memory::data_type::f32, tag::ba);
  dnn::PackedWeights cache;
  int plain_calls = 0;
  const dnn::WeightsSource source{[&] {
                                    ++plain_calls;
                                    return static_cast<const void*>(plain.data());
                                  },
                                  &cache, plain.data()};
  auto first = dnn::ResolveWeights(primitive, "w", plain_md, source);
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = dnn::ResolveWeights(primitive, "w", plain_md, source);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(first->second, second->second) << "packed twice";
  EXPECT_EQ(plain_calls, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first->second) % alignment, 0u) << rows << "x" << cols;
  const float* packed = static_cast<const float*>(first->second);
  for (int64_t r = 0; r < rows; r += 97) {
    for (int64_t c = 0; c < cols; c += 89) {
      ASSERT_EQ(packed[c * rows + r], plain[static_cast<size_t>(r * cols + c)]) << r << ", " << c;
    }
  }
}

TEST(PackedWeightsTest, SmallWeightsArePackedOnceAnd64ByteAligned) { ExpectPackedTransposed(64, 48, 64); }

TEST(PackedWeightsTest, LargeWeightsArePackedOnceOnA2MiBBoundary) {
  ExpectPackedTransposed(1024, 1536, HugePagesOff() ? 64 : size_t{2} << 20);  // 6 MiB
}

// Packs a random K x N bfloat16 B (stored transposed when `transposed`) into the layout a
// bfloat16 matmul primitive picks for it, with PackBf16Weights and with oneDNN's reorder
// over a buffer first filled with other bits, and compares every byte (padding included).
void ExpectPackedLikeOneDnn(int64_t k, int64_t n, bool transposed) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::engine& engine = dnn::CpuEngine();
  const dnnl::memory::desc a_md({256, k}, dt::bf16, tag::ab), c_md({256, n}, dt::bf16, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, dnnl::memory::desc({k, n}, dt::bf16, tag::any), c_md),
                                        engine);
  const dnnl::memory::desc layout = pd.weights_desc();
  if (!dnn::PacksBf16Weights(layout)) {
    GTEST_SKIP() << "this CPU's bfloat16 matmul reads its weights in a layout PackBf16Weights does not write";
  }
  std::mt19937 gen(static_cast<uint32_t>(k * 131 + n * 7 + transposed));
  std::vector<uint16_t> b(static_cast<size_t>(k * n));
  for (uint16_t& v : b) v = static_cast<uint16_t>(gen());
  const dnnl::memory::desc plain_md({k, n}, dt::bf16, transposed ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
  std::vector<uint16_t> expected(layout.get_size() / 2, 0x5555), packed(layout.get_size() / 2, 0xAAAA);
  dnnl::memory plain(plain_md, engine, b.data()), reordered(layout, engine, expected.data());
  dnnl::stream stream(engine);
  dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
  stream.wait();
  ThreadPool threads(2);
  dnn::PackBf16Weights(b.data(), transposed, layout, packed.data(), threads);
  for (size_t i = 0; i < packed.size(); ++i) {
    ASSERT_EQ(packed[i], expected[i]) << k << " x " << n << (transposed ? " transposed" : " plain") << ", element " << i;
  }
}

TEST(PackedWeightsTest, Bf16PackOfAPlainBMatchesOneDnnsReorder) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  ExpectPackedLikeOneDnn(128, 256, false);
  ExpectPackedLikeOneDnn(784, 320, false);  // K a multiple of 16, not of 32
  ExpectPackedLikeOneDnn(77, 100, false);   // odd K, N not a multiple of 64
}

TEST(PackedWeightsTest, Bf16PackOfATransposedBMatchesOneDnnsReorder) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  ExpectPackedLikeOneDnn(128, 256, true);
  ExpectPackedLikeOneDnn(784, 320, true);
  ExpectPackedLikeOneDnn(77, 100, true);
}

}  // namespace
}  // namespace onnx_amp
