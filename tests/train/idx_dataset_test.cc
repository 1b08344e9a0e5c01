#include "runtime/train/idx_dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> IdxBytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

void WritePlain(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void WriteGzip(const fs::path& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(file);
}

class IdxDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onnx_amp_idx_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(IdxDatasetTest, ReadsPlainAndGzippedFilesScaledTo01) {
  // Two 2x3 images; pixel 255 -> 1, 51 -> 0.2.
  const std::vector<uint8_t> pixels = {0, 51, 255, 1, 2, 3, 10, 20, 30, 40, 50, 60};
  WriteGzip(dir_ / "train-images-idx3-ubyte.gz", IdxBytes({2, 2, 3}, pixels));
  WritePlain(dir_ / "train-labels-idx1-ubyte", IdxBytes({2}, {7, 3}));
  const Expected<TrainEvalData> data = LoadIdxFolder(dir_);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_FALSE(data->eval.has_value());
  const Tensor& x = data->train.features;
  EXPECT_EQ(x.shape(), (Shape{2, 2, 3}));
  for (size_t i = 0; i < pixels.size(); ++i) EXPECT_EQ(x.data<float>()[i], pixels[i] / 255.0f) << i;
  EXPECT_EQ(data->train.labels.data<int64_t>()[0], 7);
  EXPECT_EQ(data->train.labels.data<int64_t>()[1], 3);
}

TEST_F(IdxDatasetTest, BadFilesAreClearErrors) {
  const fs::path labels = dir_ / "labels";
  WritePlain(labels, IdxBytes({2}, {1, 2}));

  const fs::path truncated = dir_ / "truncated";
  WritePlain(truncated, IdxBytes({2, 2, 2}, {1, 2, 3}));
  Expected<LabeledData> result = LoadIdxPair(truncated, labels);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("truncated"), std::string::npos) << result.status().message();
  EXPECT_NE(result.status().message().find(truncated.string()), std::string::npos);

  const fs::path bad_magic = dir_ / "bad_magic";
  WritePlain(bad_magic, {0x50, 0x4B, 0x03, 0x04, 0, 0, 0, 0});
  result = LoadIdxPair(bad_magic, labels);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("magic"), std::string::npos) << result.status().message();

  const fs::path three_images = dir_ / "three_images";
  WritePlain(three_images, IdxBytes({3, 1, 1}, {1, 2, 3}));
  result = LoadIdxPair(three_images, labels);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("3 images but"), std::string::npos) << result.status().message();

  // 2^31 * 2^31 * 4 images bytes wrap to 0 in 64 bits, which an empty payload would match.
  const fs::path wrapping = dir_ / "wrapping";
  WritePlain(wrapping, IdxBytes({0x80000000u, 0x80000000u, 4}, {}));
  result = LoadIdxPair(wrapping, labels);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("elements"), std::string::npos) << result.status().message();
  EXPECT_NE(result.status().message().find(wrapping.string()), std::string::npos);

  result = LoadIdxPair(dir_ / "missing", labels);
  EXPECT_EQ(result.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(LoadIdxFolder(dir_ / "no_such_folder").status().code(), ErrorCode::kNotFound);
}

TEST(FashionMnistTest, TestSetHasAThousandImagesPerClass) {
  const fs::path folder = ONNX_AMP_FASHION_MNIST_DIR;
  const Expected<LabeledData> test_set =
      LoadIdxPair(folder / "t10k-images-idx3-ubyte.gz", folder / "t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(test_set.ok()) << test_set.status().message();
  EXPECT_EQ(test_set->features.shape(), (Shape{10000, 28, 28}));
  std::array<int, 10> histogram{};
  const int64_t* labels = test_set->labels.data<int64_t>();
  for (int64_t i = 0; i < 10000; ++i) {
    ASSERT_GE(labels[i], 0);
    ASSERT_LT(labels[i], 10);
    ++histogram[labels[i]];
  }
  for (int count : histogram) EXPECT_EQ(count, 1000);
  float max_pixel = 0.0f;
  for (int64_t i = 0; i < test_set->features.num_elements(); ++i) {
    max_pixel = std::max(max_pixel, test_set->features.data<float>()[i]);
  }
  EXPECT_EQ(max_pixel, 1.0f);
}

}  // namespace
}  // namespace onnx_amp
