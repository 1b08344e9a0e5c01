// Test utility: runs ONE node through its CPU kernel from CpuKernelRegistry() with a
// minimal KernelContext (fresh output tensors, a 2-thread pool, no subgraphs), plus
// helpers to build input tensors and read outputs back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ops/common/fused_activation.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp::testing {

// What the plan would have told the kernel beyond its node and inputs: the inputs and
// output 0 stored channels-last (KernelContext::input_channels_last / output_channels_last),
// a folded activation or ReluGrad.
struct NodeRunOptions {
  uint32_t channels_last_inputs = 0;  // bit i: input i
  bool channels_last_output = false;
  FusedActivation activation;
  bool fused_relu_grad = false;
  bool pools_output = false;  // KernelContext::pools_output: a 2x2 max pool folded in
  int threads = 2;  // 1 or 2
};

class SingleNode {
 public:
  explicit SingleNode(std::string op_type, int opset = 18, std::string domain = "");

  SingleNode& Attr(const std::string& name, int64_t value);
  SingleNode& Attr(const std::string& name, float value);
  SingleNode& Attr(const std::string& name, const std::string& value);
  SingleNode& Attr(const std::string& name, const std::vector<int64_t>& values);
  SingleNode& Attr(const std::string& name, const std::vector<float>& values);
  // Appends an input; an undefined Tensor() is an absent optional input ("").
  SingleNode& Input(Tensor tensor);
  SingleNode& NumOutputs(int count);
  SingleNode& Options(const NodeRunOptions& options);

  onnx::NodeProto& node() { return node_; }
  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }

  // Runs the kernel; Unsupported when no CPU kernel is registered for the op.
  Expected<std::vector<Tensor>> Run() const;

 private:
  onnx::NodeProto node_;
  int opset_;
  std::vector<Tensor> inputs_;
  NodeRunOptions options_;
};

// Runs `node` (inputs named by position) with the given input tensors.
Expected<std::vector<Tensor>> RunNode(const onnx::NodeProto& node, int opset, const std::vector<Tensor>& inputs,
                                      const NodeRunOptions& options = {});

// The same [N, C, spatial...] tensor (same shape, dtype and values) with its elements
// stored channels-last ([N, spatial..., C] in memory), and back.
Tensor ToChannelsLast(const Tensor& nchw);
Tensor FromChannelsLast(const Tensor& channels_last);

// A tensor with the given contents (values.size() must match the shape).
template <typename T>
Tensor MakeTensor(const Shape& shape, const std::vector<T>& values);
// A floating tensor of `dtype` (float16/bfloat16/float32/float64) from float values,
// rounded once to the dtype.
Tensor MakeFloatTensor(DType dtype, const Shape& shape, const std::vector<double>& values);

template <typename T>
std::vector<T> ToVector(const Tensor& tensor);
// Any numeric or bool tensor widened to double (float16/bfloat16 exactly).
std::vector<double> ToDoubles(const Tensor& tensor);

}  // namespace onnx_amp::testing
