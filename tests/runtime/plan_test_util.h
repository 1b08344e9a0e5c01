// Helpers of the plan tests (plan rewrites, in-place outputs): random weights, models
// converted to a policy, executors with or without the rewrites, and the outputs and op
// counts of a run.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "converter/convert_model.h"
#include "runtime/core/float16.h"
#include "runtime/executor/executor.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp::testing {

inline std::vector<float> Uniform(std::mt19937_64& rng, size_t count, float low, float high) {
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(rng);
  return values;
}

// The value `v` rounded once to `dtype` (float16 or bfloat16; float32 as it is), as a float.
inline float RoundedTo(DType dtype, float v) {
  if (dtype == DType::kFloat16) return Float16::FromFloat(v).ToFloat();
  if (dtype == DType::kBFloat16) return BFloat16::FromFloat(v).ToFloat();
  return v;
}

inline std::vector<float> Rounded(std::vector<float> values, DType dtype) {
  for (float& v : values) v = RoundedTo(dtype, v);
  return values;
}

// A float32 tensor of uniform values in [-1, 1) (from `seed`) with NaN, +inf, -inf, +0
// and -0 in turn at every position p with p % every == offset.
inline Tensor WithSpecials(const Shape& shape, uint64_t seed, int64_t every, int64_t offset) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  Tensor x = Tensor::Empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = i % every == offset ? specials[(i / every) % 5] : uniform(rng);
  }
  return x;
}

inline void AddInitializer(onnx::GraphProto& graph, const std::string& name, const Shape& shape,
                           const std::vector<float>& values) {
  Tensor tensor = Tensor::Empty(DType::kFloat32, shape);
  std::copy(values.begin(), values.end(), tensor.data<float>());
  Expected<onnx::TensorProto> proto = TensorToProto(tensor, name);
  ASSERT_TRUE(proto.ok()) << proto.status().message();
  *graph.add_initializer() = *proto;
}

// A tensor of `dtype` (float32, float64, float16 or bfloat16) holding `values`, each
// rounded once.
inline Tensor FilledTensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor tensor = Tensor::Empty(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), tensor.num_elements());
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < tensor.num_elements(); ++i) {
    switch (dtype) {
      case DType::kFloat32: tensor.data<float>()[i] = static_cast<float>(values[i]); break;
      case DType::kFloat64: tensor.data<double>()[i] = values[i]; break;
      case DType::kFloat16: tensor.data<Float16>()[i] = Float16::FromFloat(static_cast<float>(values[i])); break;
      case DType::kBFloat16: tensor.data<BFloat16>()[i] = BFloat16::FromFloat(static_cast<float>(values[i])); break;
      default: ADD_FAILURE() << "FilledTensor takes float dtypes"; return tensor;
    }
  }
  return tensor;
}

inline std::vector<double> AsDouble(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (tensor.dtype()) {
      case DType::kFloat32: values[i] = tensor.data<float>()[i]; break;
      case DType::kFloat16: values[i] = tensor.data<Float16>()[i].ToFloat(); break;
      case DType::kBFloat16: values[i] = tensor.data<BFloat16>()[i].ToFloat(); break;
      default: ADD_FAILURE() << "unexpected dtype"; return values;
    }
  }
  return values;
}

inline onnx::ModelProto Converted(const onnx::ModelProto& model, PolicyKind policy) {
  if (policy == PolicyKind::kFloat32) return model;
  ConvertOptions options;
  options.policy.kind = policy;
  EXPECT_TRUE(options.policy.Compile().ok());
  Expected<ConvertResult> result = ConvertModel(model, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result->model) : onnx::ModelProto();
}

inline std::unique_ptr<Executor> Make(const onnx::ModelProto& model, bool rewrite) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.fuse_activations = rewrite;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(model), options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  return executor.ok() ? std::move(executor).value() : nullptr;
}

inline RunResult RunOk(Executor& executor, const std::map<std::string, Tensor>& feeds) {
  Expected<RunResult> result = executor.Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : RunResult();
}

// One run of `model` on a fresh executor, with or without the plan's rewrites.
inline RunResult RunPlan(const onnx::ModelProto& model, bool rewrite, const std::map<std::string, Tensor>& feeds) {
  std::unique_ptr<Executor> executor = Make(model, rewrite);
  return executor ? RunOk(*executor, feeds) : RunResult();
}

inline int64_t Calls(const RunResult& result, const std::string& label) {
  auto it = result.stats.op_times.find(label);
  return it == result.stats.op_times.end() ? 0 : it->second.calls;
}

inline const Tensor& Output(const RunResult& result, const std::string& name) {
  for (const NamedTensor& output : result.outputs) {
    if (output.name == name) return output.tensor;
  }
  static const Tensor none;
  ADD_FAILURE() << "no output " << name;
  return none;
}

}  // namespace onnx_amp::testing
