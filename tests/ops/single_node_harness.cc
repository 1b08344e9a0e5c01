#include "tests/ops/single_node_harness.h"

#include <cstring>
#include <memory>
#include <utility>

#include "ops/kernel_registry.h"
#include "runtime/exec/kernel.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp::testing {
namespace {

ThreadPool& TestThreads(int threads) {
  static ThreadPool one(1), two(2);
  return threads == 1 ? one : two;
}

class SingleNodeContext final : public KernelContext {
 public:
  SingleNodeContext(const onnx::NodeProto& node, int opset, const std::vector<Tensor>& inputs,
                    const NodeRunOptions& options)
      : node_(node), opset_(opset), inputs_(inputs), options_(options), outputs_(node.output_size()) {}

  const onnx::NodeProto& node() const override { return node_; }
  int opset() const override { return opset_; }
  DeviceKind device() const override { return DeviceKind::kCpu; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const Tensor* input(int index) const override {
    if (index < 0 || index >= num_inputs() || !inputs_[index].defined()) return nullptr;
    return &inputs_[index];
  }
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  // An output named "" is not wanted, as in ONNX.
  bool output_used(int index) const override {
    return index >= 0 && index < num_outputs() && !node_.output(index).empty();
  }
  Expected<Tensor*> AllocateOutput(int index, DType dtype, const Shape& shape) override {
    if (index < 0 || index >= num_outputs()) return InternalError("output index out of range");
    outputs_[index] = Tensor::Empty(dtype, shape);
    return &outputs_[index];
  }
  void SetOutput(int index, Tensor tensor) override {
    ONNX_AMP_ASSERT(index >= 0 && index < num_outputs(), "output index out of range");
    outputs_[index] = std::move(tensor);
  }
  Expected<std::vector<Tensor>> RunSubgraph(std::string_view, std::vector<Tensor>) override {
    return Unsupported("subgraphs are not supported by the single-node harness");
  }
  ThreadPool& threads() override { return TestThreads(options_.threads); }
  FusedActivation fused_activation() const override { return options_.activation; }
  bool fused_relu_grad() const override { return options_.fused_relu_grad; }
  bool pools_output() const override { return options_.pools_output; }
  bool input_channels_last(int index) const override {
    return index >= 0 && index < 32 && ((options_.channels_last_inputs >> index) & 1u) != 0;
  }
  bool output_channels_last(int index) const override { return index == 0 && options_.channels_last_output; }

  std::vector<Tensor> TakeOutputs() { return std::move(outputs_); }

 private:
  const onnx::NodeProto& node_;
  int opset_;
  const std::vector<Tensor>& inputs_;
  NodeRunOptions options_;
  std::vector<Tensor> outputs_;
};

// Copies `from` into `to` (same shape and dtype), moving element (n, c, p) between
// NCHW order and channels-last order in the direction `to_channels_last` says.
void Permute(const Tensor& from, bool to_channels_last, Tensor& to) {
  ONNX_AMP_ASSERT(from.rank() >= 2, "a channels-last tensor is [N, C, spatial...]");
  const int64_t n = from.dim(0), channels = from.dim(1);
  const int64_t spatial = n * channels == 0 ? 0 : from.num_elements() / (n * channels);
  const size_t size = DTypeSize(from.dtype());
  const auto* in = static_cast<const char*>(from.raw_data());
  auto* out = static_cast<char*>(to.raw_data());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t nchw = (b * channels + c) * spatial + p, last = (b * spatial + p) * channels + c;
        const int64_t source = to_channels_last ? nchw : last, target = to_channels_last ? last : nchw;
        std::memcpy(out + target * size, in + source * size, size);
      }
    }
  }
}

onnx::AttributeProto* AddAttribute(onnx::NodeProto& node, const std::string& name,
                                   onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(type);
  return attr;
}

}  // namespace

SingleNode::SingleNode(std::string op_type, int opset, std::string domain) : opset_(opset) {
  node_.set_op_type(std::move(op_type));
  node_.set_domain(std::move(domain));
  node_.set_name("test_node");
  node_.add_output("y0");
}

SingleNode& SingleNode::Attr(const std::string& name, int64_t value) {
  AddAttribute(node_, name, onnx::AttributeProto::INT)->set_i(value);
  return *this;
}

SingleNode& SingleNode::Attr(const std::string& name, float value) {
  AddAttribute(node_, name, onnx::AttributeProto::FLOAT)->set_f(value);
  return *this;
}

SingleNode& SingleNode::Attr(const std::string& name, const std::string& value) {
  AddAttribute(node_, name, onnx::AttributeProto::STRING)->set_s(value);
  return *this;
}

SingleNode& SingleNode::Attr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = AddAttribute(node_, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
  return *this;
}

SingleNode& SingleNode::Attr(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto* attr = AddAttribute(node_, name, onnx::AttributeProto::FLOATS);
  for (float v : values) attr->add_floats(v);
  return *this;
}

SingleNode& SingleNode::Input(Tensor tensor) {
  std::string name;
  if (tensor.defined()) name = std::string("x").append(std::to_string(inputs_.size()));
  node_.add_input(name);
  inputs_.push_back(std::move(tensor));
  return *this;
}

SingleNode& SingleNode::NumOutputs(int count) {
  node_.clear_output();
  for (int i = 0; i < count; ++i) node_.add_output(std::string("y").append(std::to_string(i)));
  return *this;
}

SingleNode& SingleNode::Options(const NodeRunOptions& options) {
  options_ = options;
  return *this;
}

Expected<std::vector<Tensor>> SingleNode::Run() const { return RunNode(node_, opset_, inputs_, options_); }

Expected<std::vector<Tensor>> RunNode(const onnx::NodeProto& node, int opset, const std::vector<Tensor>& inputs,
                                      const NodeRunOptions& options) {
  const KernelDef* def = CpuKernelRegistry().Find(node.domain(), node.op_type(), DeviceKind::kCpu);
  if (def == nullptr) return Unsupported("no CPU kernel for " + node.op_type());
  SingleNodeContext context(node, opset, inputs, options);
  ONNX_AMP_RETURN_IF_ERROR(def->compute(context));
  return context.TakeOutputs();
}

Tensor ToChannelsLast(const Tensor& nchw) {
  Tensor out = Tensor::Empty(nchw.dtype(), nchw.shape());
  Permute(nchw, true, out);
  return out;
}

Tensor FromChannelsLast(const Tensor& channels_last) {
  Tensor out = Tensor::Empty(channels_last.dtype(), channels_last.shape());
  Permute(channels_last, false, out);
  return out;
}

template <typename T>
Tensor MakeTensor(const Shape& shape, const std::vector<T>& values) {
  Tensor tensor = Tensor::Empty(DTypeOf<T>::value, shape);
  ONNX_AMP_ASSERT(static_cast<int64_t>(values.size()) == tensor.num_elements(), "value count does not match shape");
  T* data = tensor.data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return tensor;
}

Tensor MakeFloatTensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor tensor = Tensor::Empty(dtype, shape);
  ONNX_AMP_ASSERT(static_cast<int64_t>(values.size()) == tensor.num_elements(), "value count does not match shape");
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::kFloat32: tensor.data<float>()[i] = static_cast<float>(values[i]); break;
      case DType::kFloat64: tensor.data<double>()[i] = values[i]; break;
      case DType::kFloat16: tensor.data<Float16>()[i] = Float16::FromFloat(static_cast<float>(values[i])); break;
      case DType::kBFloat16: tensor.data<BFloat16>()[i] = BFloat16::FromFloat(static_cast<float>(values[i])); break;
      case DType::kUndefined:
      case DType::kUInt8:
      case DType::kInt8:
      case DType::kUInt16:
      case DType::kInt16:
      case DType::kInt32:
      case DType::kInt64:
      case DType::kString:
      case DType::kBool:
      case DType::kUInt32:
      case DType::kUInt64:
      case DType::kComplex64:
      case DType::kComplex128:
        ONNX_AMP_ASSERT(false, "MakeFloatTensor needs a floating dtype");
    }
  }
  return tensor;
}

template <typename T>
std::vector<T> ToVector(const Tensor& tensor) {
  ONNX_AMP_ASSERT(tensor.dtype() == DTypeOf<T>::value, "ToVector dtype mismatch");
  const T* data = tensor.data<T>();
  return std::vector<T>(data, data + tensor.num_elements());
}

std::vector<double> ToDoubles(const Tensor& tensor) {
  const int64_t n = tensor.num_elements();
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (tensor.dtype()) {
      case DType::kFloat32: out[i] = tensor.data<float>()[i]; break;
      case DType::kFloat64: out[i] = tensor.data<double>()[i]; break;
      case DType::kFloat16: out[i] = tensor.data<Float16>()[i].ToFloat(); break;
      case DType::kBFloat16: out[i] = tensor.data<BFloat16>()[i].ToFloat(); break;
      case DType::kInt8: out[i] = tensor.data<int8_t>()[i]; break;
      case DType::kInt16: out[i] = tensor.data<int16_t>()[i]; break;
      case DType::kInt32: out[i] = tensor.data<int32_t>()[i]; break;
      case DType::kInt64: out[i] = static_cast<double>(tensor.data<int64_t>()[i]); break;
      case DType::kUInt8: out[i] = tensor.data<uint8_t>()[i]; break;
      case DType::kUInt16: out[i] = tensor.data<uint16_t>()[i]; break;
      case DType::kUInt32: out[i] = tensor.data<uint32_t>()[i]; break;
      case DType::kUInt64: out[i] = static_cast<double>(tensor.data<uint64_t>()[i]); break;
      case DType::kBool: out[i] = tensor.data<bool>()[i] ? 1.0 : 0.0; break;
      case DType::kUndefined:
      case DType::kString:
      case DType::kComplex64:
      case DType::kComplex128:
        ONNX_AMP_ASSERT(false, "ToDoubles needs a numeric dtype");
    }
  }
  return out;
}

#define ONNX_AMP_HARNESS_INSTANTIATE(T)                                         \
  template Tensor MakeTensor<T>(const Shape& shape, const std::vector<T>& values); \
  template std::vector<T> ToVector<T>(const Tensor& tensor);
ONNX_AMP_HARNESS_INSTANTIATE(float)
ONNX_AMP_HARNESS_INSTANTIATE(double)
ONNX_AMP_HARNESS_INSTANTIATE(Float16)
ONNX_AMP_HARNESS_INSTANTIATE(BFloat16)
ONNX_AMP_HARNESS_INSTANTIATE(int8_t)
ONNX_AMP_HARNESS_INSTANTIATE(int16_t)
ONNX_AMP_HARNESS_INSTANTIATE(int32_t)
ONNX_AMP_HARNESS_INSTANTIATE(int64_t)
ONNX_AMP_HARNESS_INSTANTIATE(uint8_t)
ONNX_AMP_HARNESS_INSTANTIATE(uint16_t)
ONNX_AMP_HARNESS_INSTANTIATE(uint32_t)
ONNX_AMP_HARNESS_INSTANTIATE(uint64_t)
ONNX_AMP_HARNESS_INSTANTIATE(bool)
#undef ONNX_AMP_HARNESS_INSTANTIATE

}  // namespace onnx_amp::testing
