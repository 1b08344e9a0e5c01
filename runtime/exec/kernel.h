// The kernel interface. A kernel is a function of a KernelContext, registered per
// (domain, op type, device); it dispatches on dtype once, at its entry, and returns
// an Unsupported status naming the dtype for combinations it does not implement.
// Device kernels (CUDA) plug into the same table with DeviceKind::kCuda.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx { class NodeProto; class GraphProto; class TensorProto; class AttributeProto; }

namespace onnx_amp {

class Device;
class ThreadPool;

// An activation the execution plan folded into a Conv/Gemm/MatMul node: the node's
// kernel applies it to its output exactly as the separate node would have.
enum class FusedActivationKind { kNone, kRelu, kLeakyRelu, kClip };

struct FusedActivation {
  FusedActivationKind kind = FusedActivationKind::kNone;
  float alpha = 0.0f;  // LeakyRelu: the slope; Clip: the lower bound
  float beta = 0.0f;   // Clip: the upper bound
};

// What a kernel keeps for one node from run to run (constant weights already in a
// primitive's layout). The executor owns it as long as its plan lives.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual const onnx::NodeProto& node() const = 0;
  // Opset version of the node's domain in the model (e.g. 13 for Softmax-13 semantics).
  virtual int opset() const = 0;
  virtual DeviceKind device() const = 0;

  virtual int num_inputs() const = 0;
  // nullptr when the input is absent ("" in the node, or beyond the node's inputs).
  virtual const Tensor* input(int index) const = 0;
  virtual int num_outputs() const = 0;
  // Whether output `index` is consumed by anyone (lets kernels skip optional outputs).
  virtual bool output_used(int index) const = 0;

  // Allocates output `index`. The executor may return memory reused from a dead tensor,
  // or (when the planner proved it safe) the buffer of input `inplace_hint`.
  virtual Expected<Tensor*> AllocateOutput(int index, DType dtype, const Shape& shape) = 0;
  // Sets output `index` to an existing tensor (views: Reshape, Identity, Squeeze...).
  virtual void SetOutput(int index, Tensor tensor) = 0;
  // A float32 work tensor that lives until the kernel returns. The executor takes it from
  // its buffer pool (kept from run to run), so large temporaries cost no fresh memory.
  virtual Expected<Tensor> ScratchFloat32(int64_t elements) { return Tensor::Empty(DType::kFloat32, {elements}); }

  // Runs a graph-valued attribute (If/Loop/Scan bodies) with the given inputs; outer-scope
  // values the body reads are resolved by the executor.
  virtual Expected<std::vector<Tensor>> RunSubgraph(std::string_view attribute,
                                                    std::vector<Tensor> inputs) = 0;

  virtual ThreadPool& threads() = 0;
  // The device the node runs on (its memory, its stream: runtime/cuda/cuda_kernel_support.h);
  // nullptr for CPU kernels.
  virtual Device* device_context() const { return nullptr; }

  // The activation fused into this node (kind kNone when none); set only for kernels
  // registered with KernelDef::fuses_activation.
  virtual FusedActivation fused_activation() const { return {}; }
  // A tensor of output 0's dtype and shape added to the result before the fused
  // activation (a residual Add folded into the CPU Conv); nullptr when none. When it dies
  // at this node and is stored in output 0's memory order, AllocateOutput(0) may return
  // its buffer: the kernel must read each of its elements before writing that element.
  virtual const Tensor* fused_addend() const { return nullptr; }
  // A float32 row of output 0's last dim added to each of its rows before the fused
  // activation (a bias Add folded into the CPU float32 MatMul); nullptr when none. Set
  // only for kernels registered with KernelDef::fuses_bias_add.
  virtual const Tensor* fused_bias() const { return nullptr; }
  // Whether output 0 is stored as float32 holding the values rounded to the node's
  // float16/bfloat16 result (a Cast to float32 folded in); set only for kernels
  // registered with KernelDef::fuses_widening_cast.
  virtual bool widens_output() const { return false; }
  // Whether output 0 (dX) is to be multiplied, as ReluGrad would, by the Relu's slope at
  // input 1 (the Relu's output); set only for kernels registered with
  // KernelDef::fuses_relu_grad.
  virtual bool fused_relu_grad() const { return false; }
  // Whether input 0 is to be read through a Relu, as the Relu node between its producer
  // and this one would give it (the Relu moved here from the producer); set only for
  // kernels registered with KernelDef::reads_through_relu.
  virtual bool relu_of_input() const { return false; }
  // Whether output 0 is the 2x2 stride-2 max pool (no pads, the last row or column of an
  // odd extent left out) of the node's result, channels-last: a MaxPool folded in; set
  // only for kernels registered with KernelDef::pools_output.
  virtual bool pools_output() const { return false; }
  // n > 0: output 1, past the node's own outputs, is to hold output 0 summed over its
  // first n axes, kept as 1s, as a ReduceSum over those axes with keepdims gives it (a
  // bias gradient folded into the activation gradient before it); 0: none. Set only for
  // kernels registered with KernelDef::sums_leading_axes.
  virtual int summed_leading_axes() const { return 0; }
  // Whether input (output) `index` holds its [N, C, ...] values in channels-last memory
  // order ([N, ..., C], runtime/executor/plan_layouts.h); set only as the kernel's
  // KernelDef::channels_last allows.
  virtual bool input_channels_last(int index) const { return false; }
  virtual bool output_channels_last(int index) const { return false; }
  // The same for fused_addend().
  virtual bool fused_addend_channels_last() const { return false; }
  // Whether input `index` holds the same values on every run (an initializer), so work
  // derived from it may be kept in state().
  virtual bool input_is_constant(int index) const { return false; }
  // This node's slot for state kept across runs; nullptr where the caller keeps none.
  virtual std::unique_ptr<KernelState>* state() { return nullptr; }

  // Attribute access (ONNX defaults are the caller's to pass).
  const onnx::AttributeProto* attribute(std::string_view name) const;
  bool has_attribute(std::string_view name) const { return attribute(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string_view fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;
  std::vector<float> attr_floats(std::string_view name) const;
  std::vector<std::string> attr_strings(std::string_view name) const;

  // Error helpers naming the node ("node 'conv1' (Conv): ...").
  Status Error(ErrorCode code, const std::string& message) const;
  Status UnsupportedDType(DType dtype) const;
};

using KernelFn = Status (*)(KernelContext& context);

// When output 0 of a kernel may be stored channels-last.
enum class ChannelsLastOutput {
  kNever,
  kAnyOrder,          // whatever order its inputs have (Conv, ConvGrad)
  kIfInput0,          // only when input 0 is (MaxPool; it may also read channels-last X into NCHW Y)
  kLikeOrderedInputs  // exactly when its `same_order_inputs` are (BatchNormalization, element-wise ops)
};

// Which values a CPU kernel takes channels-last. Inputs not named are NCHW.
struct ChannelsLastSupport {
  // bit i: input i in either order, whatever the others'. A fused addend
  // (KernelContext::fused_addend) is read in either order too.
  uint32_t any_order_inputs = 0;
  uint32_t same_order_inputs = 0;  // bit i: input i stored in output 0's order
  ChannelsLastOutput output = ChannelsLastOutput::kNever;
};

// Element-wise kernels: output 0 in the order of their inputs, which must all have its
// shape (a broadcast input keeps them all NCHW): element i of each is element i of all.
inline constexpr ChannelsLastSupport kElementWiseChannelsLast{.same_order_inputs = ~0u,
                                                               .output = ChannelsLastOutput::kLikeOrderedInputs};

struct KernelDef {
  std::string_view domain;  // "" for ai.onnx
  std::string_view op_type;
  DeviceKind device;
  KernelFn compute;
  // Output 0 may be written into the buffer of an input that has the output's dtype and
  // shape and dies at this node. Safe for kernels that read element i of that input
  // before writing element i of the output (element-wise unary and binary ops).
  bool may_inplace = false;
  // Applies KernelContext::fused_activation() to output 0, so the plan may fold a Relu,
  // LeakyRelu or Clip that alone reads that output into this node.
  bool fuses_activation = false;
  // Device kernels: inputs read on the host (shapes, axes, scalars that size the work),
  // as InputBit-style bits (bit i: input i). The plan keeps them on the host.
  uint32_t host_inputs = 0;
  // Inputs whose dtype and shape alone the kernel reads, never their data (Shape, Size):
  // the plan copies them nowhere.
  uint32_t metadata_inputs = 0;
  // Device kernels: the dtypes of input `dtype_input` they implement, one bit per DType
  // value (0: any). A node whose dtype is outside them runs on the CPU.
  uint32_t dtypes = 0;
  int dtype_input = 0;
  // Honours KernelContext::fused_bias(), so the plan may fold into this node the Add of
  // a constant float32 row that alone reads its float32 output 0 (a linear layer's bias).
  bool fuses_bias_add = false;
  // Honours KernelContext::widens_output(), so the plan may fold a Cast to float32 that
  // alone reads a float16/bfloat16 output 0 into this node.
  bool fuses_widening_cast = false;
  // Honours KernelContext::relu_of_input(), so the plan may move into this node the Relu
  // that a Conv applies to the value only this node reads (a max pool after a float32
  // Conv: the Relu then costs no pass of its own).
  bool reads_through_relu = false;
  // Which [N, C, H, W] inputs and output 0 it reads and writes in channels-last order
  // where KernelContext says so (runtime/executor/plan_layouts.h).
  ChannelsLastSupport channels_last = {};
  // Honours KernelContext::fused_relu_grad(), so the plan may fold into this gradient
  // node a ReluGrad that alone reads its output 0 (dX) with input 1 (X) as the Relu's
  // output (MaxPoolGrad after a Relu: one pass less over the activation's size).
  bool fuses_relu_grad = false;
  // Whether a Conv with these constant weights and group runs its 2x2 stride-2 max pool
  // itself, writing only the pooled output (KernelContext::pools_output), so the plan
  // may fold into it such a MaxPool that alone reads its channels-last output 0 (a first
  // layer's pool: the layer's whole output is then never stored). nullptr: never.
  bool (*pools_output)(const Tensor& weights, int64_t group) = nullptr;
  // Honours KernelContext::summed_leading_axes(), so the plan may fold into this node a
  // ReduceSum over the leading axes of its output 0 (a bias gradient: the sums then cost
  // no pass over dX of their own).
  bool sums_leading_axes = false;
};

}  // namespace onnx_amp
