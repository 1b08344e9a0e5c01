// Constant: the tensor in one of its value attributes (value, value_float(s),
// value_int(s)). String and sparse constants are not supported.
#include <onnx/onnx_pb.h>

#include <cstring>

#include "ops/controlflow/controlflow_kernels.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {
namespace {

template <typename T, typename Values>
Tensor FromValues(const Values& values, Shape shape) {
  Tensor tensor = Tensor::Empty(DTypeOf<T>::value, std::move(shape));
  T* out = tensor.data<T>();
  for (int i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values.Get(i));
  return tensor;
}

}  // namespace

Status ConstantCpu(KernelContext& context) {
  for (const onnx::AttributeProto& attr : context.node().attribute()) {
    if (attr.name() == "value") {
      Expected<Tensor> tensor = TensorFromProto(attr.t());
      if (!tensor.ok()) return context.Error(tensor.status().code(), tensor.status().message());
      context.SetOutput(0, std::move(tensor).value());
      return Status::Ok();
    }
    if (attr.name() == "value_float") {
      Tensor tensor = Tensor::Empty(DType::kFloat32, {});
      *tensor.data<float>() = attr.f();
      context.SetOutput(0, std::move(tensor));
      return Status::Ok();
    }
    if (attr.name() == "value_int") {
      Tensor tensor = Tensor::Empty(DType::kInt64, {});
      *tensor.data<int64_t>() = attr.i();
      context.SetOutput(0, std::move(tensor));
      return Status::Ok();
    }
    if (attr.name() == "value_floats") {
      context.SetOutput(0, FromValues<float>(attr.floats(), {attr.floats_size()}));
      return Status::Ok();
    }
    if (attr.name() == "value_ints") {
      context.SetOutput(0, FromValues<int64_t>(attr.ints(), {attr.ints_size()}));
      return Status::Ok();
    }
    if (attr.name() == "value_string" || attr.name() == "value_strings" || attr.name() == "sparse_value") {
      return context.Error(ErrorCode::kUnsupported, "'" + attr.name() + "' constants are not supported");
    }
  }
  return context.Error(ErrorCode::kInvalidModel, "no value attribute");
}

}  // namespace onnx_amp
