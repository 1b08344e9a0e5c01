// Every model of the ONNX backend test data loads, and load -> save -> load gives back
// the same protobuf bytes, both saved self-contained and with its tensors moved to an
// external data file.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <vector>

#include "runtime/onnx/model_io.h"
#include "tests/onnx/test_util.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;
using testing::Serialized;

std::vector<fs::path> ModelFiles(const fs::path& suite) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(suite)) {
    if (entry.is_regular_file() && entry.path().filename() == "model.onnx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Saves with `options`, reloads and compares with the first load.
void ExpectRoundTrip(const onnx::ModelProto& model, const fs::path& source, const fs::path& target,
                     const SaveOptions& options) {
  const Status saved = SaveModel(model, target, options);
  ASSERT_TRUE(saved.ok()) << source << ": " << saved.message();
  Expected<onnx::ModelProto> reloaded = LoadModel(target);
  ASSERT_TRUE(reloaded.ok()) << source << ": " << reloaded.status().message();
  EXPECT_EQ(Serialized(model), Serialized(*reloaded)) << source;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(model, *reloaded)) << source;
}

TEST(BackendModelsTest, EveryModelLoadsAndRoundTripsLosslessly) {
  const fs::path root = testing::BackendTestData();
  ASSERT_TRUE(fs::is_directory(root)) << "ONNX_AMP_BACKEND_TEST_DATA " << root << " is not a folder";
  testing::TempDir temp;
  // Thousands of saves: skipping fsync keeps this test fast; model_io_test covers durable saves.
  SaveOptions inline_options;
  inline_options.mode = ExternalData::kNever;
  inline_options.durable = false;
  SaveOptions external_options = inline_options;
  external_options.mode = ExternalData::kAlways;
  external_options.external_threshold_bytes = 64;

  size_t found = 0;
  size_t loaded = 0;
  size_t same_as_file = 0;
  for (const char* suite : {"node", "simple", "pytorch-converted", "pytorch-operator", "real"}) {
    if (!fs::is_directory(root / suite)) continue;
    size_t suite_loaded = 0;
    for (const fs::path& path : ModelFiles(root / suite)) {
      ++found;
      Expected<onnx::ModelProto> model = LoadModel(path);
      EXPECT_TRUE(model.ok()) << model.status().message();
      if (!model.ok()) continue;
      ++loaded;
      ++suite_loaded;
      if (Serialized(*model) == testing::ReadFile(path)) ++same_as_file;
      ExpectRoundTrip(*model, path, temp / "inline.onnx", inline_options);
      ExpectRoundTrip(*model, path, temp / "external.onnx", external_options);
    }
    std::cout << "[ suite    ] " << suite << ": " << suite_loaded << " models loaded and round-tripped\n";
  }
  std::cout << "[ total    ] " << loaded << " of " << found << " models; " << same_as_file
            << " re-serialize to the exact bytes of their file\n";
  EXPECT_EQ(loaded, found);
  // These files were written by protobuf, so nothing was lost even in the first load.
  EXPECT_EQ(same_as_file, loaded);
  EXPECT_GT(found, 1000u) << "too few models: is the backend test data complete?";
}

}  // namespace
}  // namespace onnx_amp
