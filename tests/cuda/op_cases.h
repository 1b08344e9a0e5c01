// The table of single-node cases the CUDA kernels are checked with: one entry per case,
// each run for the float dtypes it lists, once through the CPU executor and once through
// the CUDA device, and compared within the dtype's tolerance (cuda_ops_test.cc). Every
// op the CUDA registry holds has at least one case (checked without a GPU).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor.h"

namespace onnx_amp::testing {

// How a case input is made. Float inputs take the dtype under test unless `dtype` is set.
struct CaseInput {
  Shape shape;
  DType dtype = DType::kUndefined;  // kUndefined: the case's float dtype
  double low = -2.0, high = 2.0;    // uniform draw (integers: [low, high))
  std::vector<double> values = {};  // fixed values instead of a draw
  bool absent = false;              // an omitted optional input ("")
};

struct OpCase {
  std::string name;
  std::string op_type;
  std::string domain;  // "" or ai.onnx_amp
  int opset = 17;
  std::vector<CaseInput> inputs;
  int outputs = 1;
  std::function<void(onnx::NodeProto&)> attributes = {};
  // The most float32 terms any output element sums (the accumulation part of the
  // tolerance); 1 for element-wise ops.
  int64_t accumulated = 1;
  // The float dtypes the case runs for (empty: float32, float16, bfloat16).
  std::vector<DType> dtypes = {};
  // Transcendental math (exp, log, erf, tanh...): CUDA's and the C library's agree to a
  // few float32 ulps, not to the bit.
  bool transcendental = false;
};

// Attribute helpers for the table.
void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value);
void SetFloat(onnx::NodeProto& node, const std::string& name, float value);
void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void SetString(onnx::NodeProto& node, const std::string& name, const std::string& value);

const std::vector<OpCase>& CudaOpCases();
// The GEMM, convolution, data-movement and optimizer-step cases (op_cases_more.cc).
void AddLinalgConvTensorTrainingCases(std::vector<OpCase>& cases);

}  // namespace onnx_amp::testing
