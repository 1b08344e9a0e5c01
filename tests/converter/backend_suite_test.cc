// Every floating-point model of the ONNX backend test data converts under each of the
// five policies to a model that passes the ONNX checker (full check) and strict shape
// inference, keeps its I/O names and types, and converts to the same bytes again.
//
// A model is floating-point when one of its main-graph inputs, outputs or initializers
// is float, double, float16 or bfloat16: those are the models a user would hand to the
// converter (a float tensor made only inside the graph, as in Constant -> Cast -> int
// output, still converts, but the test does not count such models). A floating-point
// model is skipped, with the reason printed, only when its float32 form is already
// outside what the converter accepts: this ONNX build cannot load it (an opset it does
// not know) or it fails the ONNX checker's full check. Anything else that goes wrong
// is a converter bug and fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "runtime/onnx/model_io.h"
#include "runtime/onnx/onnx_checks.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSuites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};
constexpr PolicyKind kPolicies[] = {PolicyKind::kFloat32, PolicyKind::kFloat16, PolicyKind::kBFloat16,
                                    PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16};

bool IsFloatElemType(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return true;
    default:
      return false;
  }
}

bool IsFloatingPointModel(const onnx::ModelProto& model) {
  const onnx::GraphProto& graph = model.graph();
  auto any_float = [](const auto& values) {
    return std::any_of(values.begin(), values.end(), [](const onnx::ValueInfoProto& value) {
      return value.type().has_tensor_type() && IsFloatElemType(value.type().tensor_type().elem_type());
    });
  };
  return any_float(graph.input()) || any_float(graph.output()) ||
         std::any_of(graph.initializer().begin(), graph.initializer().end(),
                     [](const onnx::TensorProto& tensor) { return IsFloatElemType(tensor.data_type()); });
}

std::vector<fs::path> ModelFolders(const fs::path& suite) {
  std::vector<fs::path> folders;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(suite)) {
    if (entry.is_regular_file() && entry.path().filename() == "model.onnx") {
      folders.push_back(entry.path().parent_path());
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::string Serialized(const onnx::ModelProto& model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

// (name, elem_type) of every graph input and output.
std::vector<std::pair<std::string, int32_t>> Interface(const onnx::ModelProto& model) {
  std::vector<std::pair<std::string, int32_t>> signature;
  for (const auto& values : {model.graph().input(), model.graph().output()}) {
    for (const onnx::ValueInfoProto& value : values) {
      signature.emplace_back(value.name(), value.type().tensor_type().elem_type());
    }
    signature.emplace_back("--", 0);  // separates inputs from outputs
  }
  return signature;
}

// The checks the issue asks of a converted model; "" when it passes them all.
std::string VerifyConverted(const onnx::ModelProto& original, const onnx::ModelProto& converted) {
  if (Status checked = CheckModel(converted, /*full_check=*/true); !checked.ok()) return checked.message();
  onnx::ModelProto inferred = converted;
  if (Status status = InferShapes(inferred, /*strict=*/true); !status.ok()) return status.message();
  if (Interface(original) != Interface(converted)) return "graph input/output names or types changed";
  return "";
}

int64_t Floor(const std::string& suite, PolicyKind policy) {
  std::ifstream in(ONNX_AMP_BACKEND_SUITE_FLOOR);
  EXPECT_TRUE(in.good()) << "cannot read " << ONNX_AMP_BACKEND_SUITE_FLOOR;
  const nlohmann::json floor = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const std::string policy_name(PolicyKindName(policy));
  if (!floor.is_object() || !floor.contains(suite) || !floor[suite].contains(policy_name) ||
      !floor[suite][policy_name].is_number_integer()) {
    ADD_FAILURE() << ONNX_AMP_BACKEND_SUITE_FLOOR << " has no integer entry [" << suite << "][" << policy_name << "]";
    return 0;
  }
  return floor[suite][policy_name].get<int64_t>();
}

struct Skip {
  std::string model;
  std::string reason;
};

struct SuitePolicy {
  const char* suite;
  PolicyKind policy;
};

// Names the case "node_mixed_float16" (ctest and --gtest_filter see this).
std::string CaseName(const SuitePolicy& param) {
  std::string name = std::string(param.suite) + "_" + std::string(PolicyKindName(param.policy));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

void PrintTo(const SuitePolicy& param, std::ostream* os) { *os << CaseName(param); }

std::vector<SuitePolicy> AllCases() {
  std::vector<SuitePolicy> cases;
  for (const char* suite : kSuites) {
    for (PolicyKind policy : kPolicies) cases.push_back({suite, policy});
  }
  return cases;
}

class BackendSuiteTest : public ::testing::TestWithParam<SuitePolicy> {};

TEST_P(BackendSuiteTest, EveryFloatModelConvertsChecksAndIsIdempotent) {
  const std::string suite = GetParam().suite;
  const PolicyKind policy = GetParam().policy;
  const fs::path root = fs::path(ONNX_AMP_BACKEND_TEST_DATA) / suite;
  ASSERT_TRUE(fs::is_directory(root)) << "ONNX_AMP_BACKEND_TEST_DATA suite " << root << " is not a folder";

  ConvertOptions options;
  options.policy.kind = policy;
  ASSERT_TRUE(options.policy.Compile().ok());

  int64_t not_float = 0;
  int64_t converted = 0;
  int64_t with_low_nodes = 0;  // of the converted, those with at least one node in the low dtype
  std::vector<Skip> skips;
  std::vector<std::string> failures;
  for (const fs::path& folder : ModelFolders(root)) {
    const std::string name = folder.filename().string();
    Expected<onnx::ModelProto> model = LoadModel(folder / "model.onnx");
    if (!model.ok()) {
      skips.push_back({name, "does not load: " + model.status().message()});
      continue;
    }
    if (!IsFloatingPointModel(*model)) {
      ++not_float;
      continue;
    }
    if (Status checked = CheckModel(*model, /*full_check=*/true); !checked.ok()) {
      skips.push_back({name, "the float32 model fails the full check: " + checked.message()});
      continue;
    }
    Expected<ConvertResult> once = ConvertModel(*model, options);
    if (!once.ok()) {
      failures.push_back(name + ": conversion failed: " + once.status().message());
      continue;
    }
    if (std::string problem = VerifyConverted(*model, once->model); !problem.empty()) {
      failures.push_back(name + ": " + problem);
      continue;
    }
    if (policy == PolicyKind::kFloat32 && Serialized(once->model) != Serialized(*model)) {
      failures.push_back(name + ": the float32 policy changed the model");
      continue;
    }
    Expected<ConvertResult> twice = ConvertModel(once->model, options);
    if (!twice.ok()) {
      failures.push_back(name + ": reconversion failed: " + twice.status().message());
      continue;
    }
    if (Serialized(twice->model) != Serialized(once->model)) {
      failures.push_back(name + ": not idempotent: converting the output again changes it");
      continue;
    }
    ++converted;
    with_low_nodes += once->report.converted_nodes > 0;
  }

  const std::string label = "[ " + suite + " / " + std::string(PolicyKindName(policy)) + " ] ";
  std::cout << label << converted << " converted (" << with_low_nodes << " with low-precision nodes), "
            << skips.size() << " skipped, " << failures.size() << " failed, " << not_float << " not floating-point\n";
  for (const Skip& skip : skips) {
    std::cout << label << "skipped " << skip.model << ": " << skip.reason << "\n";
    EXPECT_FALSE(skip.reason.empty()) << skip.model;
  }
  for (const std::string& failure : failures) ADD_FAILURE() << label << failure;
  EXPECT_GE(converted, Floor(suite, policy)) << label << "fewer models convert than the committed floor";
}

INSTANTIATE_TEST_SUITE_P(Backend, BackendSuiteTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<SuitePolicy>& info) { return CaseName(info.param); });

}  // namespace
}  // namespace onnx_amp
