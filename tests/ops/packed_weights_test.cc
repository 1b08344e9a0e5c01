// Constant weights reordered once into a primitive's layout (dnn::ResolveWeights): the
// packed copy holds the reordered values, is made once per key, and a large one starts
// on a 2 MiB boundary so that it can sit on huge pages (unless ONNX_AMP_HUGE_PAGES=0).
// float32 and bfloat16 weights packed on every call (ops/common/weight_pack.h) hold the
// bits oneDNN's own reorder writes, and so do float16/bfloat16 blocks of a wider matrix
// widened into a float32 layout as they are packed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ops/common/onednn_utils.h"
#include "ops/common/weight_pack.h"
#include "runtime/core/convert.h"
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

// Packs a random K x N B of `type` (stored transposed when `transposed`) into the layout
// a matmul primitive of that type picks for it, with PackWeights and with oneDNN's reorder
// over a buffer first filled with other bits, and compares every byte (padding included).
void ExpectPackedLikeOneDnn(dnnl::memory::data_type type, int64_t k, int64_t n, bool transposed) {
  using tag = dnnl::memory::format_tag;
  const dnnl::engine& engine = dnn::CpuEngine();
  const dnnl::memory::desc a_md({256, k}, type, tag::ab), c_md({256, n}, type, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, dnnl::memory::desc({k, n}, type, tag::any), c_md),
                                        engine);
  const dnnl::memory::desc layout = pd.weights_desc();
  const std::string label = std::to_string(k) + " x " + std::to_string(n) + (transposed ? " transposed" : " plain");
  if (!dnn::PacksWeights(layout, type)) {
    GTEST_SKIP() << "this CPU's matmul reads its weights in a layout PackWeights does not write (" << label << ")";
  }
  const size_t element_size = type == dnnl::memory::data_type::f32 ? 4 : 2;
  std::mt19937 gen(static_cast<uint32_t>(k * 131 + n * 7 + transposed));
  std::vector<uint8_t> b(static_cast<size_t>(k * n) * element_size);
  for (uint8_t& byte : b) byte = static_cast<uint8_t>(gen());
  const dnnl::memory::desc plain_md({k, n}, type, transposed ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
  std::vector<uint8_t> expected(layout.get_size(), 0x55), packed(layout.get_size(), 0xAA);
  dnnl::memory plain(plain_md, engine, b.data()), reordered(layout, engine, expected.data());
  dnnl::stream stream(engine);
  dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
  stream.wait();
  ThreadPool threads(2);
  dnn::PackWeights({b.data(), type, transposed, transposed ? k : n}, layout, packed.data(), threads);
  for (size_t i = 0; i < packed.size(); ++i) ASSERT_EQ(packed[i], expected[i]) << label << ", byte " << i;
}

// K a multiple of a block, of half a block (784), and odd with N not a multiple of 64.
TEST(PackedWeightsTest, Bf16PackMatchesOneDnnsReorder) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  for (const bool transposed : {false, true}) {
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::bf16, 128, 256, transposed);
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::bf16, 784, 320, transposed);
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::bf16, 77, 100, transposed);
  }
}

TEST(PackedWeightsTest, Float32PackMatchesOneDnnsReorder) {
  for (const bool transposed : {false, true}) {
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::f32, 128, 256, transposed);
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::f32, 776, 320, transposed);
    ExpectPackedLikeOneDnn(dnnl::memory::data_type::f32, 77, 100, transposed);
  }
}

// Packs the K x N block at (row, column) of a random float16 or bfloat16 `rows` x
// `columns` matrix (stored transposed when `transposed`) into the float32 layout a matmul
// picks, widening as it packs, and compares every byte with oneDNN's reorder of the
// block widened first (padding included).
void ExpectWidenedPackLikeOneDnn(dnnl::memory::data_type source_type, int64_t k, int64_t n, bool transposed) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::engine& engine = dnn::CpuEngine();
  const dnnl::memory::desc a_md({256, k}, dt::f32, tag::ab), c_md({256, n}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, dnnl::memory::desc({k, n}, dt::f32, tag::any), c_md),
                                        engine);
  const dnnl::memory::desc layout = pd.weights_desc();
  const std::string label = std::to_string(k) + " x " + std::to_string(n) + (transposed ? " transposed" : " plain");
  if (!dnn::PacksWeights(layout, source_type)) {
    GTEST_SKIP() << "this CPU's matmul reads its weights in a layout PackWeights does not write (" << label << ")";
  }
  // The block sits 3 rows and 5 columns into a matrix 7 and 9 wider.
  const int64_t rows = k + 7, columns = n + 9, row = 3, column = 5;
  const int64_t leading = transposed ? rows : columns;
  std::mt19937 gen(static_cast<uint32_t>(k * 31 + n * 3 + transposed));
  std::normal_distribution<float> value(0.0f, 4.0f);
  std::vector<float> wide(static_cast<size_t>(rows * columns));
  for (float& v : wide) v = value(gen);
  std::vector<uint16_t> low(wide.size());
  if (source_type == dt::f16) {
    ConvertFloatToHalf(wide.data(), low.data(), wide.size());
    ConvertHalfToFloat(low.data(), wide.data(), wide.size());
  } else {
    ConvertFloatToBFloat16(wide.data(), low.data(), wide.size());
    ConvertBFloat16ToFloat(low.data(), wide.data(), wide.size());
  }
  // B(i, j) = matrix(row + i, column + j), the matrix stored row-major or transposed.
  const int64_t offset = transposed ? column * leading + row : row * leading + column;
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{1, leading} : dnnl::memory::dims{leading, 1};
  std::vector<uint8_t> expected(layout.get_size(), 0x55), packed(layout.get_size(), 0xAA);
  dnnl::memory plain(dnnl::memory::desc({k, n}, dt::f32, strides), engine, wide.data() + offset);
  dnnl::memory reordered(layout, engine, expected.data());
  dnnl::stream stream(engine);
  dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
  stream.wait();
  ThreadPool threads(2);
  dnn::PackWeights({low.data() + offset, source_type, transposed, leading}, layout, packed.data(), threads);
  for (size_t i = 0; i < packed.size(); ++i) ASSERT_EQ(packed[i], expected[i]) << label << ", byte " << i;
}

TEST(PackedWeightsTest, LowPrecisionBlocksWidenIntoTheFloat32Layout) {
  for (const auto type : {dnnl::memory::data_type::f16, dnnl::memory::data_type::bf16}) {
    for (const bool transposed : {false, true}) {
      ExpectWidenedPackLikeOneDnn(type, 128, 256, transposed);
      ExpectWidenedPackLikeOneDnn(type, 77, 100, transposed);
    }
  }
}

}  // namespace
}  // namespace onnx_amp
