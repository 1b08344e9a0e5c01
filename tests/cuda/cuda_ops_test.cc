// Every CUDA kernel against the CPU kernel of the same op: the cases of op_cases.h, each
// for its float dtypes, run as one-node models through the CPU executor and through
// the CUDA device, outputs compared within a tolerance derived from the output dtype
// (both sides compute in float32 and round once: one unit in the last place of the
// dtype) plus float32 accumulation-order and math-library terms. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <set>

#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/onnx_amp_schemas.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/executor/executor.h"
#include "tests/cuda/op_cases.h"
#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {
namespace {

CudaDevice* SharedDevice() {
  static std::unique_ptr<CudaDevice> device = [] {
    Expected<std::unique_ptr<CudaDevice>> made = CudaDevice::Create({}, CudaKernelRegistry());
    return made.ok() ? std::move(made).value() : nullptr;
  }();
  return device.get();
}

Tensor MakeInput(const CaseInput& in, DType case_dtype, std::mt19937& rng) {
  const DType dtype = in.dtype == DType::kUndefined ? case_dtype : in.dtype;
  const int64_t count = NumElements(in.shape);
  std::vector<double> values = in.values;
  if (values.empty()) {
    for (int64_t i = 0; i < count; ++i) {
      if (IsFloatingPoint(dtype)) {
        values.push_back(in.low == in.high ? in.low : std::uniform_real_distribution<double>(in.low, in.high)(rng));
      } else {
        values.push_back(static_cast<double>(std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(in.low), std::max<int64_t>(static_cast<int64_t>(in.high) - 1, 0))(rng)));
      }
    }
  }
  if (IsFloatingPoint(dtype)) return MakeFloatTensor(dtype, in.shape, values);
  Tensor tensor = Tensor::Empty(dtype, in.shape);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::kInt64) tensor.data<int64_t>()[i] = static_cast<int64_t>(values[i]);
    else if (dtype == DType::kInt32) tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    else if (dtype == DType::kBool) tensor.data<bool>()[i] = values[i] != 0.0;
    else ADD_FAILURE() << "no generator for " << DTypeName(dtype);
  }
  return tensor;
}

struct CaseModel {
  onnx::ModelProto model;
  std::map<std::string, Tensor> feeds;
};

CaseModel BuildCase(const OpCase& c, DType dtype) {
  CaseModel built;
  built.model.set_ir_version(8);
  auto* onnx_opset = built.model.add_opset_import();
  onnx_opset->set_version(c.opset);
  auto* amp_opset = built.model.add_opset_import();
  amp_opset->set_domain(std::string(kOnnxAmpDomain));
  amp_opset->set_version(1);
  onnx::GraphProto& graph = *built.model.mutable_graph();
  graph.set_name(c.name);
  onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(c.op_type);
  node.set_domain(c.domain);
  node.set_name(c.name);
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].absent) {
      node.add_input("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    node.add_input(name);
    Tensor tensor = MakeInput(c.inputs[i], dtype, rng);
    onnx::ValueInfoProto* input = graph.add_input();
    input->set_name(name);
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(ToOnnx(tensor.dtype()));
    for (int64_t d : tensor.shape()) type->mutable_shape()->add_dim()->set_dim_value(d);
    built.feeds[name] = std::move(tensor);
  }
  for (int k = 0; k < c.outputs; ++k) {
    node.add_output("out" + std::to_string(k));
    graph.add_output()->set_name("out" + std::to_string(k));
  }
  if (c.attributes) c.attributes(node);
  return built;
}

Expected<RunResult> RunCase(const CaseModel& built, Device* device) {
  ExecutorOptions options;
  options.device = device;
  options.num_threads = 2;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(built.model, options));
  return executor->Run(built.feeds);
}

// |gpu - cpu| <= 2u|cpu| + terms: u the output dtype's unit roundoff (the one rounding
// each side does), accumulation of `accumulated` float32 terms in another order, and a
// few float32 ulps of math-library difference, scaled by the output's largest value.
void ExpectClose(const OpCase& c, const std::string& name, const Tensor& cpu, const Tensor& gpu) {
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << name;
  ASSERT_EQ(cpu.shape(), gpu.shape()) << name;
  const std::vector<double> expected = ToDoubles(cpu);
  const std::vector<double> actual = ToDoubles(gpu);
  if (!IsFloatingPoint(cpu.dtype())) {
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(actual[i], expected[i]) << name << " at " << i;
    return;
  }
  const double u = UnitRoundoff(cpu.dtype());
  const double u32 = UnitRoundoff(DType::kFloat32);
  double scale = 0.0;
  for (double v : expected) {
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  const double relative = 2.0 * u + (c.transcendental ? 16.0 * u32 : 0.0);
  const double absolute = (4.0 * static_cast<double>(c.accumulated) * u32 + (c.transcendental ? 16.0 * u32 : 0.0) +
                           (c.accumulated > 1 ? 2.0 * u : 0.0)) *
                          std::max(scale, 1.0);
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      ASSERT_TRUE(std::isnan(actual[i])) << name << " at " << i;
      continue;
    }
    if (std::isinf(expected[i])) {
      ASSERT_EQ(actual[i], expected[i]) << name << " at " << i;
      continue;
    }
    ASSERT_NEAR(actual[i], expected[i], relative * std::fabs(expected[i]) + absolute) << name << " at " << i;
  }
}

struct CaseParam {
  size_t index;
  DType dtype;
};

std::vector<CaseParam> AllParams() {
  std::vector<CaseParam> params;
  const std::vector<OpCase>& cases = CudaOpCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<DType> dtypes = cases[i].dtypes;
    if (dtypes.empty()) dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
    for (DType dtype : dtypes) params.push_back({i, dtype});
  }
  return params;
}

class CudaOpTest : public ::testing::TestWithParam<CaseParam> {
 protected:
  void SetUp() override {
    RegisterOnnxAmpOpSchemas();
    if (SharedDevice() == nullptr) GTEST_SKIP() << "no CUDA device is visible";
  }
};

TEST_P(CudaOpTest, MatchesCpu) {
  const OpCase& c = CudaOpCases()[GetParam().index];
  const CaseModel built = BuildCase(c, GetParam().dtype);
  Expected<RunResult> cpu = RunCase(built, nullptr);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  Expected<RunResult> gpu = RunCase(built, SharedDevice());
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  EXPECT_GE(gpu->stats.device_steps, 1) << c.op_type << " did not run on the GPU";
  ASSERT_EQ(cpu->outputs.size(), gpu->outputs.size());
  for (size_t k = 0; k < cpu->outputs.size(); ++k) {
    ExpectClose(c, cpu->outputs[k].name, cpu->outputs[k].tensor, gpu->outputs[k].tensor);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<CaseParam>& info) {
                           std::string dtype(DTypeName(info.param.dtype));
                           return CudaOpCases()[info.param.index].name + "_" + dtype;
                         });

// Runs without a GPU: the table covers every kernel the CUDA registry holds.
TEST(CudaOpCoverageTest, EveryCudaKernelHasACase) {
  std::set<std::pair<std::string, std::string>> covered;
  for (const OpCase& c : CudaOpCases()) covered.insert({std::string(CanonicalDomain(c.domain)), c.op_type});
  for (const KernelDef* def : CudaKernelRegistry().All()) {
    EXPECT_TRUE(covered.count({std::string(CanonicalDomain(def->domain)), std::string(def->op_type)}))
        << "no test case for the CUDA kernel of " << def->op_type << " (domain '" << def->domain << "')";
  }
}

}  // namespace
}  // namespace onnx_amp::testing
