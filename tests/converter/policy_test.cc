// PrecisionPolicy: op classes from ops.def, user overrides, and the JSON policy file.
#include "converter/precision_policy.h"

#include <gtest/gtest.h>

namespace onnx_amp {
namespace {

TEST(PolicyTest, ParsesEveryPolicyName) {
  for (const char* name : {"float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"}) {
    auto kind = ParsePolicyKind(name);
    ASSERT_TRUE(kind.ok()) << name;
    EXPECT_EQ(PolicyKindName(*kind), name);
  }
  auto bad = ParsePolicyKind("fp16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp16"), std::string::npos);
}

TEST(PolicyTest, DefaultClassesFollowOpsDef) {
  PrecisionPolicy policy;
  ASSERT_TRUE(policy.Compile().ok());
  EXPECT_EQ(policy.ClassOf("", "MatMul", "m").precision_class, PrecisionClass::kAllow);
  EXPECT_EQ(policy.ClassOf("", "Add", "a").precision_class, PrecisionClass::kInfer);
  EXPECT_EQ(policy.ClassOf("", "ReduceSum", "r").precision_class, PrecisionClass::kDeny);
  EXPECT_EQ(policy.ClassOf("ai.onnx", "Reshape", "r").precision_class, PrecisionClass::kClear);
  const NodeClass unknown = policy.ClassOf("com.example", "Frobnicate", "f");
  EXPECT_EQ(unknown.precision_class, PrecisionClass::kFixedFp32);
  EXPECT_EQ(unknown.reason, "unknown op");

  policy.kind = PolicyKind::kMixedBFloat16;
  EXPECT_EQ(policy.ClassOf("", "ReduceSum", "r").precision_class, PrecisionClass::kInfer);
  EXPECT_EQ(policy.ClassOf("", "Exp", "e").precision_class, PrecisionClass::kDeny);
  policy.kind = PolicyKind::kFloat16;
  EXPECT_EQ(policy.ClassOf("", "Exp", "e").precision_class, PrecisionClass::kAllow);
  EXPECT_EQ(policy.ClassOf("", "NonMaxSuppression", "n").precision_class, PrecisionClass::kFixedFp32);
  // Control flow passes values through: its clusters are painted like clear ops.
  policy.kind = PolicyKind::kMixedFloat16;
  EXPECT_EQ(policy.ClassOf("", "Loop", "l").precision_class, PrecisionClass::kClear);
  EXPECT_EQ(policy.ClassOf("", "If", "i").precision_class, PrecisionClass::kClear);
}

TEST(PolicyTest, OverridesNodesBeforeOpsAndFp32BeforeLow) {
  PrecisionPolicy policy;
  policy.fp32_ops = {"MatMul"};
  policy.low_ops = {"Exp"};
  policy.fp32_nodes = "^head/";
  policy.low_nodes = "head|attn";
  ASSERT_TRUE(policy.Compile().ok());
  EXPECT_EQ(policy.ClassOf("", "MatMul", "m").precision_class, PrecisionClass::kDeny);
  EXPECT_EQ(policy.ClassOf("", "Exp", "e").precision_class, PrecisionClass::kAllow);
  EXPECT_EQ(policy.ClassOf("", "MatMul", "attn/q").precision_class, PrecisionClass::kAllow);
  const NodeClass both = policy.ClassOf("", "Add", "head/add");
  EXPECT_EQ(both.precision_class, PrecisionClass::kDeny);
  EXPECT_TRUE(both.user_pinned);
}

TEST(PolicyTest, ErrorsNameTheFlag) {
  PrecisionPolicy policy;
  policy.fp32_nodes = "(unclosed";
  Status status = policy.Compile();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--fp32-nodes"), std::string::npos) << status.message();

  PrecisionPolicy overlap;
  overlap.fp32_ops = {"Add"};
  overlap.low_ops = {"Add"};
  status = overlap.Compile();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--low-ops"), std::string::npos) << status.message();
}

TEST(PolicyTest, JsonFileHasTheSameKeys) {
  auto policy = ParsePolicyJson(R"({"policy": "mixed_bfloat16", "fp32_ops": ["Add"], "low_ops": ["Exp"],
                                    "fp32_nodes": "^a", "low_nodes": "b$", "keep_io_types": ["x"]})",
                                "p.json");
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  EXPECT_EQ(policy->kind, PolicyKind::kMixedBFloat16);
  EXPECT_EQ(policy->fp32_ops, std::vector<std::string>{"Add"});
  EXPECT_EQ(policy->low_ops, std::vector<std::string>{"Exp"});
  EXPECT_FALSE(policy->keep_io_types.all);
  EXPECT_TRUE(policy->keep_io_types.Keeps("x"));
  EXPECT_FALSE(policy->keep_io_types.Keeps("y"));
  EXPECT_EQ(policy->ClassOf("", "MatMul", "ab").precision_class, PrecisionClass::kDeny);

  auto off = ParsePolicyJson(R"({"keep_io_types": false})", "p.json");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->keep_io_types.Keeps("x"));
}

TEST(PolicyTest, HardwareAndDataRanges) {
  for (const char* name : {"any", "cpu-no-fp16", "cpu-no-bf16"}) {
    auto hardware = ParseTargetHardware(name);
    ASSERT_TRUE(hardware.ok()) << name;
    EXPECT_EQ(TargetHardwareName(*hardware), name);
  }
  EXPECT_TRUE(HasFastArithmetic(TargetHardware::kAny, DType::kFloat16));
  EXPECT_FALSE(HasFastArithmetic(TargetHardware::kCpuNoFp16, DType::kFloat16));
  EXPECT_TRUE(HasFastArithmetic(TargetHardware::kCpuNoFp16, DType::kBFloat16));
  EXPECT_FALSE(HasFastArithmetic(TargetHardware::kCpuNoBf16, DType::kBFloat16));

  auto policy = ParsePolicyJson(R"({"hardware": "cpu-no-bf16", "data_ranges": {"h": 1e5, "y": 0}})", "p.json");
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  EXPECT_EQ(policy->hardware, TargetHardware::kCpuNoBf16);
  EXPECT_EQ(policy->data_ranges, (std::map<std::string, double>{{"h", 1e5}, {"y", 0.0}}));
  PrecisionPolicy defaults;
  EXPECT_EQ(defaults.hardware, TargetHardware::kAny);
  EXPECT_TRUE(defaults.data_ranges.empty());
}

TEST(PolicyTest, JsonErrorsNameFileAndKey) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {Case{R"({"polcy": "float16"})", "unknown key 'polcy'"},
                        Case{R"({"policy": "half"})", "key 'policy'"},
                        Case{R"({"fp32_ops": "Add"})", "key 'fp32_ops'"},
                        Case{R"({"low_nodes": "[z-a]"})", "key 'low_nodes'"},
                        Case{R"({"keep_io_types": 3})", "key 'keep_io_types'"},
                        Case{R"({"hardware": "gpu"})", "key 'hardware'"},
                        Case{R"({"data_ranges": {"x": -1}})", "key 'data_ranges'"},
                        Case{R"({"data_ranges": ["x"]})", "key 'data_ranges'"},
                        Case{R"([1, 2])", "expected a JSON object"},
                        Case{R"({"policy": )", "not valid JSON"}}) {
    auto policy = ParsePolicyJson(c.text, "p.json");
    ASSERT_FALSE(policy.ok()) << c.text;
    EXPECT_EQ(policy.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(policy.status().message().find("p.json"), std::string::npos) << policy.status().message();
    EXPECT_NE(policy.status().message().find(c.expected), std::string::npos) << policy.status().message();
  }
  auto missing = LoadPolicyFile("no-such-policy-file.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace onnx_amp
