// Malformed model files and hostile external-data locations: each gives a clear error
// that names the file (and the tensor), and nothing crashes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <string>

#include "runtime/onnx/model_io.h"
#include "tests/onnx/test_util.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

// A float tensor 'W' of `elements` values stored externally, feeding an Identity node.
onnx::ModelProto ModelWithExternalWeight(const std::string& location, int64_t elements, const std::string& offset = "",
                                         const std::string& length = "") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("g");
  onnx::TensorProto* weight = graph->add_initializer();
  weight->set_name("W");
  weight->set_data_type(onnx::TensorProto_DataType_FLOAT);
  weight->add_dims(elements);
  weight->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  const std::pair<std::string, std::string> entries[] = {
      {"location", location}, {"offset", offset}, {"length", length}};
  for (const auto& [key, value] : entries) {
    if (key != "location" && value.empty()) continue;
    onnx::StringStringEntryProto* entry = weight->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Identity");
  node->add_input("W");
  node->add_output("Y");
  onnx::ValueInfoProto* output = graph->add_output();
  output->set_name("Y");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  return model;
}

void WriteModel(const onnx::ModelProto& model, const fs::path& path) { WriteFile(path, testing::Serialized(model)); }

// Loads `path`, expects failure with `code`, and returns the message after checking it
// names the file and contains every piece of `needles`.
std::string ExpectLoadError(const fs::path& path, ErrorCode code, std::initializer_list<std::string> needles,
                            const LoadOptions& options = {}) {
  Expected<onnx::ModelProto> model = LoadModel(path, options);
  EXPECT_FALSE(model.ok()) << path;
  if (model.ok()) return "";
  const std::string& message = model.status().message();
  EXPECT_EQ(model.status().code(), code) << message;
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << "error does not start with the file: " << message;
  for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
  return message;
}

TEST(BadInputTest, MissingFile) {
  TempDir temp;
  ExpectLoadError(temp / "absent.onnx", ErrorCode::kNotFound, {"not found"});
}

TEST(BadInputTest, FolderInsteadOfFile) {
  TempDir temp;
  ExpectLoadError(temp.path(), ErrorCode::kInvalidArgument, {"folder"});
}

TEST(BadInputTest, FifoDoesNotHang) {
  TempDir temp;
  ASSERT_EQ(::mkfifo((temp / "pipe.onnx").c_str(), 0600), 0);
  ExpectLoadError(temp / "pipe.onnx", ErrorCode::kInvalidArgument, {"not a regular file"});
  ASSERT_EQ(::mkfifo((temp / "pipe.bin").c_str(), 0600), 0);
  WriteModel(ModelWithExternalWeight("pipe.bin", 4), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"tensor 'W'", "'pipe.bin' is not a regular file"});
}

TEST(BadInputTest, EmptyFile) {
  TempDir temp;
  WriteFile(temp / "empty.onnx", "");
  ExpectLoadError(temp / "empty.onnx", ErrorCode::kInvalidModel, {"file is empty"});
}

TEST(BadInputTest, RandomBytes) {
  TempDir temp;
  std::mt19937 rng(1234);
  std::string bytes(4096, '\0');
  for (char& byte : bytes) byte = static_cast<char>(rng() & 0xff);
  WriteFile(temp / "random.onnx", bytes);
  ExpectLoadError(temp / "random.onnx", ErrorCode::kInvalidModel, {"not a valid ONNX model"});
}

TEST(BadInputTest, TruncatedModel) {
  TempDir temp;
  for (const fs::path& source : {testing::GeneratedModels() / "opset21" / "model.onnx",
                                 testing::BackendTestData() / "pytorch-converted" / "test_ConvTranspose2d" /
                                     "model.onnx"}) {
    const std::string whole = testing::ReadFile(source);
    ASSERT_GT(whole.size(), 100u) << source;
    WriteFile(temp / "half.onnx", whole.substr(0, whole.size() / 2));
    ExpectLoadError(temp / "half.onnx", ErrorCode::kInvalidModel, {"not a valid ONNX model"});
  }
}

TEST(BadInputTest, MissingExternalDataFile) {
  TempDir temp;
  WriteModel(ModelWithExternalWeight("w.bin", 4), temp / "model.onnx");
  const std::string message = ExpectLoadError(temp / "model.onnx", ErrorCode::kNotFound,
                                              {"tensor 'W'", "external data file 'w.bin' not found"});
  EXPECT_EQ(message, (temp / "model.onnx").string() + ": tensor 'W': external data file 'w.bin' not found");
}

TEST(BadInputTest, OverlongLocation) {
  TempDir temp;
  WriteModel(ModelWithExternalWeight(std::string(5000, 'a'), 4), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel,
                  {"tensor 'W'", "external data location of 5000 bytes exceeds the limit of 4096"});
}

TEST(BadInputTest, AbsoluteLocation) {
  TempDir temp;
  WriteModel(ModelWithExternalWeight("/etc/passwd", 4), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel,
                  {"tensor 'W'", "external data location '/etc/passwd' is absolute"});
  // Validated even when the data stays in place.
  LoadOptions in_place;
  in_place.load_external_data = false;
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"is absolute"}, in_place);
}

TEST(BadInputTest, DotDotLeavingTheFolder) {
  TempDir temp;
  fs::create_directory(temp / "model");
  WriteFile(temp / "outside.bin", std::string(16, 'x'));
  for (const char* location : {"../outside.bin", "sub/../../outside.bin"}) {
    WriteModel(ModelWithExternalWeight(location, 4), temp / "model" / "model.onnx");
    ExpectLoadError(temp / "model" / "model.onnx", ErrorCode::kInvalidModel,
                    {"tensor 'W'", std::string("'") + location + "' points outside the model folder"});
  }
}

TEST(BadInputTest, DotDotStayingInsideIsFine) {
  TempDir temp;
  fs::create_directories(temp / "sub");
  const float values[4] = {1.0f, -2.0f, 0.5f, 4.0f};
  WriteFile(temp / "w.bin", std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  WriteModel(ModelWithExternalWeight("sub/../w.bin", 4), temp / "model.onnx");
  Expected<onnx::ModelProto> model = LoadModel(temp / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->graph().initializer(0).raw_data(), testing::ReadFile(temp / "w.bin"));
}

TEST(BadInputTest, SymlinkedFileLeavingTheFolder) {
  TempDir temp;
  fs::create_directory(temp / "model");
  WriteFile(temp / "outside.bin", std::string(16, 'x'));
  fs::create_symlink(temp / "outside.bin", temp / "model" / "link.bin");
  WriteModel(ModelWithExternalWeight("link.bin", 4), temp / "model" / "model.onnx");
  ExpectLoadError(temp / "model" / "model.onnx", ErrorCode::kInvalidModel,
                  {"tensor 'W'", "'link.bin'", "symbolic link", "outside the model folder"});
}

TEST(BadInputTest, SymlinkedFolderLeavingTheFolder) {
  TempDir temp;
  fs::create_directories(temp / "model");
  fs::create_directories(temp / "elsewhere");
  WriteFile(temp / "elsewhere" / "w.bin", std::string(16, 'x'));
  fs::create_directory_symlink(temp / "elsewhere", temp / "model" / "weights");
  WriteModel(ModelWithExternalWeight("weights/w.bin", 4), temp / "model" / "model.onnx");
  ExpectLoadError(temp / "model" / "model.onnx", ErrorCode::kInvalidModel,
                  {"tensor 'W'", "'weights/w.bin'", "outside the model folder"});
}

TEST(BadInputTest, SymlinkStayingInsideIsFine) {
  TempDir temp;
  WriteFile(temp / "real.bin", std::string(16, '\0'));
  fs::create_symlink("real.bin", temp / "link.bin");
  WriteModel(ModelWithExternalWeight("link.bin", 4), temp / "model.onnx");
  Expected<onnx::ModelProto> model = LoadModel(temp / "model.onnx");
  EXPECT_TRUE(model.ok()) << model.status().message();
}

TEST(BadInputTest, RangeBeyondEndOfFile) {
  TempDir temp;
  WriteFile(temp / "w.bin", std::string(100, 'x'));
  WriteModel(ModelWithExternalWeight("w.bin", 16, "64", "64"), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel,
                  {"tensor 'W'", "'w.bin' (100 bytes)", "offset 64 + length 64"});
  WriteModel(ModelWithExternalWeight("w.bin", 16, "4096"), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"tensor 'W'", "offset 4096"});
}

TEST(BadInputTest, LengthNotMatchingTheShape) {
  TempDir temp;
  WriteFile(temp / "w.bin", std::string(100, 'x'));
  // 4 floats need 16 bytes; without a length the rest of the file (100 bytes) is taken.
  WriteModel(ModelWithExternalWeight("w.bin", 4), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"tensor 'W'", "holds 100 bytes", "need 16"});
}

TEST(BadInputTest, MalformedOffset) {
  TempDir temp;
  WriteFile(temp / "w.bin", std::string(16, 'x'));
  WriteModel(ModelWithExternalWeight("w.bin", 4, "-8"), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"tensor 'W'", "offset '-8'"});
}

TEST(BadInputTest, LocationIsAFolder) {
  TempDir temp;
  fs::create_directory(temp / "weights");
  WriteModel(ModelWithExternalWeight("weights", 4), temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"tensor 'W'", "not a regular file"});
}

TEST(BadInputTest, ModelWithoutGraph) {
  TempDir temp;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  WriteModel(model, temp / "model.onnx");
  ExpectLoadError(temp / "model.onnx", ErrorCode::kInvalidModel, {"no graph"});
}

}  // namespace
}  // namespace onnx_amp
