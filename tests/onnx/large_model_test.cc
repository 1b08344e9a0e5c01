// A model holding more than 2 GiB of weights (beyond one protobuf message) saves with
// its tensors moved to external data, and reloads with every byte intact.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/onnx/model_io.h"
#include "tests/onnx/test_util.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBigBytes = (size_t{2} << 30) + 4096;

// Word i of the pattern; any misplaced or lost 8 bytes change it.
uint64_t PatternWord(size_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull; }

void FillPattern(std::string* bytes) {
  for (size_t i = 0; i < bytes->size() / 8; ++i) {
    const uint64_t word = PatternWord(i);
    std::memcpy(bytes->data() + i * 8, &word, 8);
  }
}

size_t FirstPatternMismatch(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size() / 8; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i * 8, 8);
    if (word != PatternWord(i)) return i * 8;
  }
  return bytes.size();
}

TEST(LargeModelTest, Over2GiBSavesWithExternalDataAndReloads) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("big");
  onnx::TensorProto* big = graph->add_initializer();
  big->set_name("big");
  big->set_data_type(onnx::TensorProto_DataType_FLOAT);
  big->add_dims(static_cast<int64_t>(kBigBytes / 4));
  big->mutable_raw_data()->resize(kBigBytes);
  FillPattern(big->mutable_raw_data());

  testing::TempDir temp;
  const Expected<std::string> serialized = SerializeModel(model);
  EXPECT_EQ(serialized.status().code(), ErrorCode::kUnsupported);
  SaveOptions single_file;
  single_file.mode = ExternalData::kNever;
  const Status refused = SaveModel(model, temp / "single.onnx", single_file);
  EXPECT_EQ(refused.code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.message().find("2 GiB"), std::string::npos) << refused.message();
  EXPECT_TRUE(fs::is_empty(temp.path()));

  SaveOptions automatic;  // kAuto moves the weights out because of the size
  automatic.durable = false;
  ASSERT_TRUE(SaveModel(model, temp / "big.onnx", automatic).ok());
  model = onnx::ModelProto();  // free the first copy before reloading (Clear keeps capacity)
  EXPECT_LT(fs::file_size(temp / "big.onnx"), 1024u);
  EXPECT_EQ(fs::file_size(temp / "big.onnx.data"), kBigBytes);

  Expected<onnx::ModelProto> reloaded = LoadModel(temp / "big.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().message();
  const std::string& bytes = reloaded->graph().initializer(0).raw_data();
  ASSERT_EQ(bytes.size(), kBigBytes);
  EXPECT_EQ(FirstPatternMismatch(bytes), kBigBytes);
}

}  // namespace
}  // namespace onnx_amp
