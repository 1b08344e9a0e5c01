// The opset decision (converter/opset_upgrade.h) on hand-built graphs: which ops need
// which opset for bfloat16 and for float16, what the policy and the target change, and
// what happens when ONNX's version converter cannot raise the opset. The expected
// opsets come from the ONNX operator changelog: Conv, MaxPool, Tan, InstanceNormalization
// admit bfloat16 from their version 22, BatchNormalization from 14, LessOrEqual from 16,
// If from 16, Dropout's ratio from 22, Resize's X from 13; CumSum admits float16 from 14,
// IsInf from 20; Einsum admits bfloat16 at no opset.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "converter/opset_upgrade.h"
#include "runtime/onnx/onnx_checks.h"
#include "tests/converter/convert_test_util.h"
#include "tests/converter/model_builder.h"

namespace onnx_amp {
namespace {

using testing::ConvertOk;
using testing::GraphBuilder;
using testing::NodeDType;
using testing::Options;

std::vector<std::pair<std::string, int64_t>> NeedsOf(const onnx::ModelProto& model, const ConvertOptions& options) {
  Expected<ValueTable> types = InferValueTypes(model);
  EXPECT_TRUE(types.ok()) << types.status().message();
  std::vector<std::pair<std::string, int64_t>> needs;
  for (const OpsetNeed& need : FindOpsetNeeds(model, *types, options.policy, options.target)) {
    needs.push_back({need.op, need.opset});
  }
  return needs;
}

std::vector<std::pair<std::string, int64_t>> NeedsOf(const onnx::ModelProto& model, PolicyKind kind) {
  return NeedsOf(model, Options(kind));
}

using Needs = std::vector<std::pair<std::string, int64_t>>;

// x[1,2,4,4] -> Conv -> Relu -> MaxPool -> y.
onnx::ModelProto ConvNet(int64_t opset) {
  onnx::ModelProto model = testing::NewModel(opset);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 2, 4, 4}).Output("y", DType::kFloat32, {1, 2, 2, 2});
  g.Floats("K", {2, 2, 1, 1}, {0.5f, 0.25f, -0.25f, 1.0f});
  g.Node("Conv", {"x", "K"}, {"c"}, "conv");
  g.Node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = g.Node("MaxPool", {"r"}, {"y"}, "pool");
  testing::SetIntsAttr(pool, "kernel_shape", {2, 2});
  testing::SetIntsAttr(pool, "strides", {2, 2});
  return model;
}

// One node of `op` on x[2,4] (float32 or int64) at `opset`.
onnx::ModelProto OneNode(const std::string& op, int64_t opset, DType dtype = DType::kFloat32, int inputs = 1) {
  onnx::ModelProto model = testing::NewModel(opset);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", dtype, {2, 4});
  const DType out = op == "LessOrEqual" || op == "IsInf" ? DType::kBool : dtype;
  g.Output("y", out, {2, 4});
  g.Node(op, std::vector<std::string>(static_cast<size_t>(inputs), "x"), {"y"}, "node");
  return model;
}

TEST(OpsetUpgradeTest, BFloat16ConvAndPoolingNeedOpset22Float16Nothing) {
  EXPECT_EQ(NeedsOf(ConvNet(13), PolicyKind::kMixedBFloat16), (Needs{{"Conv", 22}, {"MaxPool", 22}}));
  EXPECT_EQ(NeedsOf(ConvNet(17), PolicyKind::kBFloat16), (Needs{{"Conv", 22}, {"MaxPool", 22}}));
  EXPECT_EQ(NeedsOf(ConvNet(22), PolicyKind::kMixedBFloat16), Needs{});
  EXPECT_EQ(NeedsOf(ConvNet(13), PolicyKind::kMixedFloat16), Needs{});
}

TEST(OpsetUpgradeTest, NormalizationsNeedTheirOwnOpsets) {
  onnx::ModelProto model = testing::NewModel(13);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 2, 4}).Output("y", DType::kFloat32, {1, 2, 4});
  for (const char* name : {"scale", "bias", "mean", "var"}) g.Floats(name, {2}, {1.0f, 0.5f});
  g.Node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"b"}, "bn");
  g.Node("InstanceNormalization", {"b", "scale", "bias"}, {"y"}, "in");
  EXPECT_EQ(NeedsOf(model, PolicyKind::kMixedBFloat16),
            (Needs{{"InstanceNormalization", 22}, {"BatchNormalization", 14}}));
}

TEST(OpsetUpgradeTest, Float16NeedsFollowTheirSchemas) {
  // IsInf is clear in every policy; CumSum is deny under mixed_float16 but converted by
  // the plain float16 policy.
  EXPECT_EQ(NeedsOf(OneNode("IsInf", 17), PolicyKind::kMixedFloat16), (Needs{{"IsInf", 20}}));
  onnx::ModelProto cumsum = testing::NewModel(13);
  {
    GraphBuilder g(cumsum.mutable_graph());
    g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
    g.Ints("axis", {}, {1});
    g.Node("CumSum", {"x", "axis"}, {"y"}, "cumsum");
  }
  EXPECT_EQ(NeedsOf(cumsum, PolicyKind::kFloat16), (Needs{{"CumSum", 14}}));
  EXPECT_EQ(NeedsOf(cumsum, PolicyKind::kMixedFloat16), Needs{});
}

TEST(OpsetUpgradeTest, OnlyOpsThatCouldRunLowCount) {
  // Tan is deny under mixed_bfloat16 (it never runs low there), allowed by plain bfloat16.
  EXPECT_EQ(NeedsOf(OneNode("Tan", 13), PolicyKind::kMixedBFloat16), Needs{});
  EXPECT_EQ(NeedsOf(OneNode("Tan", 13), PolicyKind::kBFloat16), (Needs{{"Tan", 22}}));
  // The user's float32 overrides, by op and by node name.
  ConvertOptions fp32_ops = Options(PolicyKind::kMixedBFloat16);
  fp32_ops.policy.fp32_ops = {"Conv"};
  ASSERT_TRUE(fp32_ops.policy.Compile().ok());
  EXPECT_EQ(NeedsOf(ConvNet(13), fp32_ops), (Needs{{"MaxPool", 22}}));
  ConvertOptions fp32_nodes = Options(PolicyKind::kMixedBFloat16);
  fp32_nodes.policy.fp32_nodes = "^(conv|pool)$";
  ASSERT_TRUE(fp32_nodes.policy.Compile().ok());
  EXPECT_EQ(NeedsOf(ConvNet(13), fp32_nodes), Needs{});
  // Integer comparisons are not float work; float ones are.
  EXPECT_EQ(NeedsOf(OneNode("LessOrEqual", 13, DType::kInt64, 2), PolicyKind::kBFloat16), Needs{});
  EXPECT_EQ(NeedsOf(OneNode("LessOrEqual", 13, DType::kFloat32, 2), PolicyKind::kBFloat16),
            (Needs{{"LessOrEqual", 16}}));
  // No opset admits bfloat16 Einsum: raising would not help.
  onnx::ModelProto einsum = OneNode("Einsum", 13, DType::kFloat32, 2);
  testing::SetStringAttr(*einsum.mutable_graph()->mutable_node(0), "equation", "ij,ij->ij");
  EXPECT_EQ(NeedsOf(einsum, PolicyKind::kMixedBFloat16), Needs{});
}

TEST(OpsetUpgradeTest, TargetAndHardwareWithoutLowWorkNeedNothing) {
  ConvertOptions onnx_amp = Options(PolicyKind::kMixedBFloat16);
  onnx_amp.target = ConvertTarget::kOnnxAmp;
  EXPECT_EQ(NeedsOf(ConvNet(13), onnx_amp), Needs{});
  ConvertOptions no_bf16 = Options(PolicyKind::kMixedBFloat16);
  no_bf16.policy.hardware = TargetHardware::kCpuNoBf16;
  EXPECT_EQ(NeedsOf(ConvNet(13), no_bf16), Needs{});
  EXPECT_EQ(NeedsOf(ConvNet(13), PolicyKind::kFloat32), Needs{});
}

TEST(OpsetUpgradeTest, ScalesAndRoiKeptFloat32DoNotCount) {
  // Resize's roi admits bfloat16 at no opset, but ops.def keeps roi and scales float32:
  // only X counts, and it admits bfloat16 from Resize-13.
  for (int64_t opset : {11, 13}) {
    onnx::ModelProto model = testing::NewModel(opset);
    GraphBuilder g(model.mutable_graph());
    g.Input("x", DType::kFloat32, {1, 1, 2, 2}).Output("y", DType::kFloat32, {1, 1, 4, 4});
    g.Floats("roi", {0}, {}).Floats("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
    g.Node("Resize", {"x", "roi", "scales"}, {"y"}, "resize");
    EXPECT_EQ(NeedsOf(model, PolicyKind::kBFloat16), opset == 11 ? (Needs{{"Resize", 13}}) : Needs{});
  }
}

TEST(OpsetUpgradeTest, SubgraphNodesCount) {
  onnx::ModelProto model = testing::NewModel(13);
  GraphBuilder g(model.mutable_graph());
  g.Input("cond", DType::kBool, {}).Input("x", DType::kFloat32, {1, 2, 4, 4});
  g.Output("y", DType::kFloat32, {1, 2, 4, 4});
  g.Floats("K", {2, 2, 1, 1}, {0.5f, 0.25f, -0.25f, 1.0f});
  auto& branch = g.Node("If", {"cond"}, {"y"}, "if");
  GraphBuilder then_branch(testing::AddGraphAttr(branch, "then_branch"));
  then_branch.Output("t", DType::kFloat32, {1, 2, 4, 4});
  then_branch.Node("Conv", {"x", "K"}, {"t"}, "conv");
  GraphBuilder else_branch(testing::AddGraphAttr(branch, "else_branch"));
  else_branch.Output("e", DType::kFloat32, {1, 2, 4, 4});
  else_branch.Node("Relu", {"x"}, {"e"}, "relu");
  // If's values admit bfloat16 from If-16.
  EXPECT_EQ(NeedsOf(model, PolicyKind::kMixedBFloat16), (Needs{{"Conv", 22}, {"If", 16}}));
}

TEST(OpsetUpgradeTest, ConvertRaisesTheOpsetByDefaultAndSaysWhy) {
  const ConvertResult result = ConvertOk(ConvNet(13), Options(PolicyKind::kMixedBFloat16));
  const OpsetDecision& decision = result.report.opset_decision;
  EXPECT_EQ(decision.action, OpsetAction::kRaised);
  EXPECT_EQ(decision.from, 13);
  EXPECT_EQ(decision.to, 22);
  EXPECT_EQ(result.report.opset, 22);
  EXPECT_EQ(result.model.opset_import(0).version(), 22);
  EXPECT_EQ(NodeDType(result.report, "conv"), "bfloat16");
  EXPECT_EQ(NodeDType(result.report, "pool"), "bfloat16");
  EXPECT_EQ(DescribeOpsetDecision(decision), "opset 13 -> 22 (bfloat16 Conv, MaxPool need opset 22)");
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());

  // Converting the output again changes nothing.
  const ConvertResult again = ConvertOk(result.model, Options(PolicyKind::kMixedBFloat16));
  EXPECT_EQ(again.report.opset_decision.action, OpsetAction::kKept);
  EXPECT_EQ(DescribeOpsetDecision(again.report.opset_decision), "");
}

TEST(OpsetUpgradeTest, KeepOpsetKeepsItAndCountsTheNodesLeftFloat32) {
  ConvertOptions keep = Options(PolicyKind::kMixedBFloat16);
  keep.keep_opset = true;
  const ConvertResult result = ConvertOk(ConvNet(13), keep);
  const OpsetDecision& decision = result.report.opset_decision;
  EXPECT_EQ(decision.action, OpsetAction::kKeptByRequest);
  EXPECT_EQ(result.model.opset_import(0).version(), 13);
  EXPECT_EQ(NodeDType(result.report, "conv"), "float");
  EXPECT_EQ(decision.NodesBelowNeededOpset(), 2);
  EXPECT_EQ(DescribeOpsetDecision(decision),
            "2 nodes stayed float32: their ops accept bfloat16 only from opset 22 (Conv, MaxPool) "
            "(drop --keep-opset to raise the opset)");
}

TEST(OpsetUpgradeTest, PinnedOpsetWinsAndConflictsWithKeep) {
  ConvertOptions pinned = Options(PolicyKind::kMixedBFloat16);
  pinned.opset = 17;
  const ConvertResult result = ConvertOk(ConvNet(13), pinned);
  EXPECT_EQ(result.report.opset_decision.action, OpsetAction::kPinned);
  EXPECT_EQ(result.model.opset_import(0).version(), 17);
  EXPECT_EQ(DescribeOpsetDecision(result.report.opset_decision),
            "opset 13 -> 17 (pinned by --opset); 2 nodes stayed float32: their ops accept bfloat16 only from "
            "opset 22 (Conv, MaxPool)");

  pinned.keep_opset = true;
  const Expected<ConvertResult> both = ConvertModel(ConvNet(13), pinned);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("--keep-opset"), std::string::npos) << both.status().message();
}

TEST(OpsetUpgradeTest, AdaptedNodesAreCheckedAgainAtTheRaisedOpset) {
  // Dropout-10 needs opset 13 for bfloat16 data; the 11 -> 12 adapter adds a float
  // ratio input, which bfloat16 admits only from Dropout-22: one conversion goes there.
  const ConvertResult result = ConvertOk(OneNode("Dropout", 11), Options(PolicyKind::kBFloat16));
  EXPECT_EQ(result.report.opset_decision.action, OpsetAction::kRaised);
  EXPECT_EQ(result.model.opset_import(0).version(), 22);
  EXPECT_EQ(DescribeOpsetDecision(result.report.opset_decision), "opset 11 -> 22 (bfloat16 Dropout needs opset 22)");
  const ConvertResult again = ConvertOk(result.model, Options(PolicyKind::kBFloat16));
  EXPECT_EQ(again.report.opset_decision.action, OpsetAction::kKept);
}

// BatchNormalization with its training outputs (gone from BatchNormalization-14, so it
// needs no newer opset itself): the 13 -> 14 adapter refuses them.
onnx::ModelProto TrainingBatchNorm() {
  onnx::ModelProto model = ConvNet(13);
  GraphBuilder g(model.mutable_graph());
  for (const char* name : {"scale", "bias", "mean", "var"}) g.Floats(name, {2}, {1.0f, 0.5f});
  model.mutable_graph()->mutable_node(2)->set_output(0, "p");
  g.Node("BatchNormalization", {"p", "scale", "bias", "mean", "var"},
         {"y", "running_mean", "running_var", "saved_mean", "saved_var"}, "bn");
  return model;
}

TEST(OpsetUpgradeTest, AnOpTheVersionConverterCannotAdaptKeepsTheOpset) {
  const ConvertResult result = ConvertOk(TrainingBatchNorm(), Options(PolicyKind::kMixedBFloat16));
  const OpsetDecision& decision = result.report.opset_decision;
  EXPECT_EQ(decision.action, OpsetAction::kKeptOnFailure);
  EXPECT_EQ(result.model.opset_import(0).version(), 13);
  EXPECT_EQ(NodeDType(result.report, "conv"), "float");
  EXPECT_NE(decision.failure.find("BatchNormalization outputs 4 and 5"), std::string::npos) << decision.failure;
  EXPECT_EQ(decision.NodesBelowNeededOpset(), 2);
  const std::string text = DescribeOpsetDecision(decision);
  EXPECT_EQ(text.rfind("opset 13 kept: ONNX's version converter cannot take the model from opset 13 to 22", 0), 0u)
      << text;
  const std::string stayed = "; 2 nodes stayed float32: their ops accept bfloat16 only from opset 22 (Conv, MaxPool)";
  EXPECT_EQ(text.substr(text.size() - stayed.size()), stayed) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
}

TEST(OpsetUpgradeTest, ModelLocalFunctionsKeepTheOpset) {
  // The version converter would drop them without a word.
  onnx::ModelProto model = ConvNet(13);
  onnx::FunctionProto* function = model.add_functions();
  function->set_name("Unused");
  function->set_domain("local");
  function->add_opset_import()->set_version(13);
  const ConvertResult result = ConvertOk(model, Options(PolicyKind::kMixedBFloat16));
  EXPECT_EQ(result.report.opset_decision.action, OpsetAction::kKeptOnFailure);
  EXPECT_NE(result.report.opset_decision.failure.find("model-local functions"), std::string::npos);
  EXPECT_EQ(result.model.functions_size(), 1);
  EXPECT_EQ(result.model.opset_import(0).version(), 13);
}

TEST(OpsetUpgradeTest, ARaisedModelThatFailsVerificationFallsBack) {
  // Resize-11 with empty roi/scales Constants next to sizes: valid at opset 11. Raised
  // to 13 (Resize's X and Constant admit bfloat16 from 13), the plain bfloat16 policy
  // converts the empty scales Constant and reads it through a Cast, and Resize-13's
  // strict inference then sees scales and sizes both given: the conversion falls back
  // to opset 11.
  onnx::ModelProto model = testing::NewModel(11);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 2, 2});
  g.Ints("sizes", {4}, {1, 1, 2, 2});
  for (const char* name : {"roi", "scales"}) {
    auto* value = g.Node("Constant", {}, {name}, name).add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    value->mutable_t()->add_dims(0);
  }
  g.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, "resize");
  const ConvertResult result = ConvertOk(model, Options(PolicyKind::kBFloat16));
  const OpsetDecision& decision = result.report.opset_decision;
  EXPECT_EQ(decision.action, OpsetAction::kKeptOnFailure);
  EXPECT_EQ(result.model.opset_import(0).version(), 11);
  EXPECT_NE(decision.failure.find("the model converted to opset 13 failed"), std::string::npos) << decision.failure;
}

TEST(OpsetUpgradeTest, ExternalTensorsKeepTheirFileReferences) {
  onnx::ModelProto model = ConvNet(13);
  onnx::TensorProto* weight = model.mutable_graph()->mutable_initializer(0);
  weight->clear_float_data();
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair{"location", "weights.bin"}, {"offset", "4096"}, {"length", "16"}}) {
    auto* entry = weight->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  const Expected<onnx::ModelProto> raised = ChangeOpset(model, 22);
  ASSERT_TRUE(raised.ok()) << raised.status().message();
  EXPECT_EQ(DefaultOpset(*raised), 22);
  const onnx::TensorProto& kept = raised->graph().initializer(0);
  EXPECT_EQ(kept.name(), "K");
  EXPECT_EQ(kept.data_location(), onnx::TensorProto::EXTERNAL);
  ASSERT_EQ(kept.external_data_size(), 3);
  EXPECT_EQ(kept.external_data(0).value(), "weights.bin");
  EXPECT_EQ(kept.external_data(1).value(), "4096");
  EXPECT_EQ(kept.external_data(2).value(), "16");
  EXPECT_EQ(kept.raw_data(), "");
}

}  // namespace
}  // namespace onnx_amp
