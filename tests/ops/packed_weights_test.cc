// Constant weights reordered once into a primitive's layout (dnn::ResolveWeights): the
// packed copy holds the reordered values, is made once per key, and a large one starts
// on a 2 MiB boundary so that it can sit on huge pages (unless ONNX_AMP_HUGE_PAGES=0).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ops/common/onednn_utils.h"

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

}  // namespace
}  // namespace onnx_amp
