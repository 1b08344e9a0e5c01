// CheckOpsetsSupported and its use in LoadModel: opsets newer than the linked ONNX
// schema registry are refused with a message naming the domain and version.
#include <gtest/gtest.h>

#include <onnx/defs/schema.h>

#include <string>

#include "runtime/onnx/model_io.h"
#include "runtime/onnx/opset_support.h"
#include "tests/onnx/test_util.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

int LastVersion(const std::string& domain) {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(domain).second;
}

onnx::ModelProto Opset21Model() {
  Expected<onnx::ModelProto> model = LoadModel(testing::GeneratedModels() / "opset21" / "model.onnx");
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : onnx::ModelProto();
}

TEST(OpsetSupportTest, RegistryKnowsOpset21) {
  EXPECT_GE(LastVersion(""), 21);
  EXPECT_TRUE(CheckOpsetsSupported(Opset21Model()).ok());
}

TEST(OpsetSupportTest, Opset30IsUnsupportedWithAClearMessage) {
  onnx::ModelProto model = Opset21Model();
  model.mutable_opset_import(0)->set_version(30);
  testing::TempDir temp;
  testing::WriteFile(temp / "model.onnx", testing::Serialized(model));

  Expected<onnx::ModelProto> loaded = LoadModel(temp / "model.onnx");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(loaded.status().message(), (temp / "model.onnx").string() +
                                           ": opset ai.onnx 30 is newer than this build supports (up to " +
                                           std::to_string(LastVersion("")) + "); upgrade onnx-amp");

  LoadOptions unchecked;
  unchecked.check_opsets = false;
  EXPECT_TRUE(LoadModel(temp / "model.onnx", unchecked).ok());
}

TEST(OpsetSupportTest, EveryKnownDomainIsChecked) {
  for (const std::string domain : {"ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training"}) {
    onnx::ModelProto model = Opset21Model();
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(LastVersion(domain == "ai.onnx" ? "" : domain) + 1);
    const Status status = CheckOpsetsSupported(model);
    EXPECT_EQ(status.code(), ErrorCode::kUnsupported) << domain;
    EXPECT_NE(status.message().find("opset " + domain + " "), std::string::npos) << status.message();
  }
}

TEST(OpsetSupportTest, CustomDomainsPass) {
  onnx::ModelProto model = Opset21Model();
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("com.example.custom");
  opset->set_version(999);
  EXPECT_TRUE(CheckOpsetsSupported(model).ok());
}

TEST(OpsetSupportTest, FunctionOpsetsAreChecked) {
  onnx::ModelProto model = Opset21Model();
  ASSERT_EQ(model.functions_size(), 1);
  model.mutable_functions(0)->mutable_opset_import(0)->set_version(LastVersion("") + 1);
  const Status status = CheckOpsetsSupported(model);
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.message().find("function 'DoubleIt'"), std::string::npos) << status.message();
}

TEST(OpsetSupportTest, OpsetZeroIsInvalid) {
  onnx::ModelProto model = Opset21Model();
  model.mutable_opset_import(0)->set_version(0);
  EXPECT_EQ(CheckOpsetsSupported(model).code(), ErrorCode::kInvalidModel);
}

TEST(OpsetSupportTest, NewerIrVersionIsUnsupported) {
  onnx::ModelProto model = Opset21Model();
  model.set_ir_version(onnx::IR_VERSION + 1);
  const Status status = CheckOpsetsSupported(model);
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.message().find("IR version " + std::to_string(onnx::IR_VERSION + 1)), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace onnx_amp
