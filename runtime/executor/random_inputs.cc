#include "runtime/executor/random_inputs.h"

#include <algorithm>
#include <vector>

#include "runtime/core/convert.h"
#include "runtime/core/limits.h"

namespace onnx_amp {
namespace {

template <typename T>
void FillIntegers(Tensor& tensor, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> digit(0, 9);
  T* out = tensor.data<T>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) out[i] = static_cast<T>(digit(rng));
}

std::vector<float> UniformFloats(int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(rng);
  return values;
}

}  // namespace

Expected<Shape> ResolveInputShape(const InputSpec& spec, const std::map<std::string, int64_t>& dim_sizes) {
  if (!spec.has_shape) {
    return InvalidArgument("input '" + spec.name + "' declares no shape; give it as a file instead of --random");
  }
  Shape shape;
  for (size_t axis = 0; axis < spec.dims.size(); ++axis) {
    if (spec.dims[axis] >= 0) {
      shape.push_back(spec.dims[axis]);
      continue;
    }
    const std::string& param = spec.dim_params[axis];
    if (param.empty()) {
      return InvalidArgument("input '" + spec.name + "' (" + InputSpecToString(spec) + "): dim " +
                             std::to_string(axis) + " has no size or name; give the input as a file");
    }
    auto it = dim_sizes.find(param);
    if (it == dim_sizes.end()) {
      return InvalidArgument("input '" + spec.name + "' (" + InputSpecToString(spec) + "): dim '" + param +
                             "' is symbolic; give its size with --dim " + param + "=N");
    }
    shape.push_back(it->second);
  }
  return shape;
}

Expected<Tensor> RandomInput(const InputSpec& spec, const std::map<std::string, int64_t>& dim_sizes,
                             std::mt19937_64& rng) {
  ONNX_AMP_ASSIGN_OR_RETURN(Shape shape, ResolveInputShape(spec, dim_sizes));
  const std::string what = "random input '" + spec.name + "' of shape " + ShapeToString(shape);
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t elements, CheckedElementCount(shape, what));
  // Floating values are drawn as float32 first.
  const size_t bytes = static_cast<size_t>(elements) * (DTypeSize(spec.dtype) + sizeof(float));
  ONNX_AMP_RETURN_IF_ERROR(CheckMemoryCap(bytes, PhysicalMemoryBytes(), what, "physical memory"));
  Tensor tensor = Tensor::Empty(spec.dtype, shape);
  const int64_t count = tensor.num_elements();
  switch (spec.dtype) {
    case DType::kFloat32: {
      const std::vector<float> values = UniformFloats(count, rng);
      std::copy(values.begin(), values.end(), tensor.data<float>());
      break;
    }
    case DType::kFloat64: {
      const std::vector<float> values = UniformFloats(count, rng);
      std::copy(values.begin(), values.end(), tensor.data<double>());
      break;
    }
    case DType::kFloat16: {
      const std::vector<float> values = UniformFloats(count, rng);
      ConvertFloatToHalf(values.data(), static_cast<uint16_t*>(tensor.raw_data()), values.size());
      break;
    }
    case DType::kBFloat16: {
      const std::vector<float> values = UniformFloats(count, rng);
      ConvertFloatToBFloat16(values.data(), static_cast<uint16_t*>(tensor.raw_data()), values.size());
      break;
    }
    case DType::kInt8: FillIntegers<int8_t>(tensor, rng); break;
    case DType::kInt16: FillIntegers<int16_t>(tensor, rng); break;
    case DType::kInt32: FillIntegers<int32_t>(tensor, rng); break;
    case DType::kInt64: FillIntegers<int64_t>(tensor, rng); break;
    case DType::kUInt8: FillIntegers<uint8_t>(tensor, rng); break;
    case DType::kUInt16: FillIntegers<uint16_t>(tensor, rng); break;
    case DType::kUInt32: FillIntegers<uint32_t>(tensor, rng); break;
    case DType::kUInt64: FillIntegers<uint64_t>(tensor, rng); break;
    case DType::kBool: {
      std::bernoulli_distribution coin(0.5);
      for (int64_t i = 0; i < count; ++i) tensor.data<bool>()[i] = coin(rng);
      break;
    }
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128:
      return Unsupported("input '" + spec.name + "': cannot generate " + std::string(DTypeName(spec.dtype)) + " values");
  }
  return tensor;
}

}  // namespace onnx_amp
