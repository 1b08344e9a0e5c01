// The fused gradient kernels under the numeric contract: float16 and bfloat16 inputs
// are read into float32, the arithmetic is float32, and each output is rounded once.
// So a low-precision run must give, bit for bit, the float32 run on the same
// (already rounded) inputs with its outputs rounded once to the low dtype.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ops/gradient_context.h"
#include "ops/onnx_amp_schemas.h"
#include "runtime/core/float16.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/executor/executor.h"

namespace onnx_amp {
namespace {

struct Input {
  std::string name;
  Shape shape;
  bool positive = false;             // float values in [0.5, 1.5] (variances, inv_std)
  std::vector<int64_t> int_values;   // non-empty: an int64 constant
};

struct KernelCase {
  std::string op;
  std::vector<Input> inputs;
  int num_outputs = 1;
  Attributes attributes = {};
};

std::vector<KernelCase> Cases() {
  const std::vector<int64_t> kernel2 = {2, 2};
  return {
      {"ReluGrad", {{"dY", {2, 5}}, {"X", {2, 5}}}},
      {"SigmoidGrad", {{"dY", {2, 5}}, {"Y", {2, 5}}}},
      {"TanhGrad", {{"dY", {2, 5}}, {"Y", {2, 5}}}},
      {"GeluGrad", {{"dY", {2, 5}}, {"X", {2, 5}}}},
      {"SoftmaxGrad", {{"dY", {2, 5}}, {"Y", {2, 5}}}},
      {"LogSoftmaxGrad", {{"dY", {2, 5}}, {"Y", {2, 5}}}},
      {"LayerNormalizationGrad",
       {{"dY", {2, 4}}, {"X", {2, 4}}, {"scale", {4}}, {"mean", {2, 1}}, {"inv_std", {2, 1}, true}},
       3},
      {"BatchNormalizationGrad",
       {{"dY", {2, 3, 2}}, {"X", {2, 3, 2}}, {"scale", {3}}, {"mean", {3}}, {"var", {3}, true}},
       3,
       {MakeAttribute("training_mode", int64_t{1})}},
      {"ConvGrad", {{"dY", {1, 2, 2, 2}}, {"X", {1, 3, 3, 3}}, {"W", {2, 3, 2, 2}}}, 3},
      {"MaxPoolGrad", {{"dY", {1, 2, 2, 2}}, {"X", {1, 2, 4, 4}}}, 1, {MakeAttribute("kernel_shape", kernel2),
                                                                      MakeAttribute("strides", kernel2)}},
      {"AveragePoolGrad", {{"dY", {1, 2, 2, 2}}, {"X", {1, 2, 4, 4}}}, 1, {MakeAttribute("kernel_shape", kernel2),
                                                                          MakeAttribute("strides", kernel2)}},
      {"GatherGrad", {{"dY", {2, 3}}, {"I", {3}, false, {1, 0, 1}}, {"shape", {2}, false, {2, 2}}}, 1,
       {MakeAttribute("axis", int64_t{1})}},
      {"SoftmaxCrossEntropyLossGrad", {{"dL", {}}, {"log_prob", {3, 4}}, {"labels", {3}, false, {0, 3, 1}}}},
  };
}

float RoundTo(DType dtype, float value) {
  switch (dtype) {
    case DType::kFloat16: return Float16::FromFloat(value).ToFloat();
    case DType::kBFloat16: return BFloat16::FromFloat(value).ToFloat();
    default: return value;
  }
}

Tensor FloatTensor(DType dtype, const Shape& shape, const std::vector<float>& values) {
  Tensor tensor = Tensor::Empty(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::kFloat16: tensor.data<Float16>()[i] = Float16::FromFloat(values[i]); break;
      case DType::kBFloat16: tensor.data<BFloat16>()[i] = BFloat16::FromFloat(values[i]); break;
      default: tensor.data<float>()[i] = values[i]; break;
    }
  }
  return tensor;
}

float ReadFloat(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case DType::kFloat16: return tensor.data<Float16>()[i].ToFloat();
    case DType::kBFloat16: return tensor.data<BFloat16>()[i].ToFloat();
    default: return tensor.data<float>()[i];
  }
}

// Runs the case's node with float inputs of `dtype` holding `values`.
std::vector<Tensor> RunCase(const KernelCase& c, DType dtype, const std::map<std::string, std::vector<float>>& values) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(18);
  onnx::OperatorSetIdProto* training = model.add_opset_import();
  training->set_domain(std::string(kOnnxAmpDomain));
  training->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(c.op);
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(c.op);
  node->set_domain(std::string(kOnnxAmpDomain));
  std::map<std::string, Tensor> feeds;
  for (const Input& input : c.inputs) {
    node->add_input(input.name);
    if (!input.int_values.empty()) {
      onnx::TensorProto* constant = graph->add_initializer();
      constant->set_name(input.name);
      constant->set_data_type(onnx::TensorProto::INT64);
      for (int64_t dim : input.shape) constant->add_dims(dim);
      for (int64_t v : input.int_values) constant->add_int64_data(v);
      continue;
    }
    onnx::ValueInfoProto* info = graph->add_input();
    info->set_name(input.name);
    auto* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(ToOnnx(dtype));
    for (int64_t dim : input.shape) type->mutable_shape()->add_dim()->set_dim_value(dim);
    feeds[input.name] = FloatTensor(dtype, input.shape, values.at(input.name));
  }
  for (int i = 0; i < c.num_outputs; ++i) {
    const std::string name = "out" + std::to_string(i);
    node->add_output(name);
    onnx::ValueInfoProto* info = graph->add_output();
    info->set_name(name);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(ToOnnx(dtype));
  }
  for (const onnx::AttributeProto& attribute : c.attributes) *node->add_attribute() = attribute;
  auto executor = Executor::Create(model);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return {};
  auto result = (*executor)->Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  std::vector<Tensor> outputs;
  for (const NamedTensor& output : result->outputs) outputs.push_back(output.tensor);
  return outputs;
}

TEST(TrainingKernels, LowPrecisionRoundsTheFloat32ResultOnce) {
  RegisterOnnxAmpOpSchemas();
  for (const KernelCase& c : Cases()) {
    for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
      SCOPED_TRACE(c.op + " " + std::string(DTypeName(dtype)));
      std::map<std::string, std::vector<float>> values;
      int seed = 1;
      for (const Input& input : c.inputs) {
        std::vector<float>& v = values[input.name];
        for (int64_t i = 0; i < NumElements(input.shape); ++i) {
          const double s = std::sin(0.9 * static_cast<double>(i) + seed);
          v.push_back(RoundTo(dtype, static_cast<float>(input.positive ? 1.0 + 0.5 * s : s)));
        }
        ++seed;
      }
      const std::vector<Tensor> reference = RunCase(c, DType::kFloat32, values);
      const std::vector<Tensor> low = RunCase(c, dtype, values);
      ASSERT_EQ(reference.size(), low.size());
      for (size_t k = 0; k < low.size(); ++k) {
        ASSERT_EQ(low[k].dtype(), dtype);
        ASSERT_EQ(low[k].shape(), reference[k].shape());
        for (int64_t i = 0; i < low[k].num_elements(); ++i) {
          EXPECT_EQ(ReadFloat(low[k], i), RoundTo(dtype, ReadFloat(reference[k], i))) << "output " << k << "[" << i << "]";
        }
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp
