#include "runtime/validate/sample_inputs.h"

#include <cmath>
#include <random>
#include <set>

#include "runtime/core/convert.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/io/npz.h"

namespace onnx_amp {
namespace {

double Draw(const SampleRange& range, std::mt19937_64& rng) {
  if (range.integral) {
    std::uniform_int_distribution<int64_t> uniform(static_cast<int64_t>(std::ceil(range.low)),
                                                   static_cast<int64_t>(std::ceil(range.high)) - 1);
    return static_cast<double>(uniform(rng));
  }
  std::uniform_real_distribution<double> uniform(range.low, range.high);
  return uniform(rng);
}

template <typename T>
void Fill(Tensor& tensor, const SampleRange& range, std::mt19937_64& rng) {
  T* out = tensor.data<T>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) out[i] = static_cast<T>(Draw(range, rng));
}

Expected<Tensor> RangedInput(const InputSpec& spec, const std::map<std::string, int64_t>& dim_sizes,
                             const SampleRange& range, std::mt19937_64& rng) {
  ONNX_AMP_ASSIGN_OR_RETURN(Shape shape, ResolveInputShape(spec, dim_sizes));
  Tensor tensor = Tensor::Empty(spec.dtype, shape);
  const size_t count = static_cast<size_t>(tensor.num_elements());
  switch (spec.dtype) {
    case DType::kFloat32: Fill<float>(tensor, range, rng); break;
    case DType::kFloat64: Fill<double>(tensor, range, rng); break;
    case DType::kFloat16:
    case DType::kBFloat16: {
      Tensor wide = Tensor::Empty(DType::kFloat32, shape);
      Fill<float>(wide, range, rng);
      if (spec.dtype == DType::kFloat16) {
        ConvertFloatToHalf(wide.data<float>(), tensor.data<uint16_t>(), count);
      } else {
        ConvertFloatToBFloat16(wide.data<float>(), tensor.data<uint16_t>(), count);
      }
      break;
    }
    case DType::kInt8: Fill<int8_t>(tensor, range, rng); break;
    case DType::kInt16: Fill<int16_t>(tensor, range, rng); break;
    case DType::kInt32: Fill<int32_t>(tensor, range, rng); break;
    case DType::kInt64: Fill<int64_t>(tensor, range, rng); break;
    case DType::kUInt8: Fill<uint8_t>(tensor, range, rng); break;
    case DType::kUInt16: Fill<uint16_t>(tensor, range, rng); break;
    case DType::kUInt32: Fill<uint32_t>(tensor, range, rng); break;
    case DType::kUInt64: Fill<uint64_t>(tensor, range, rng); break;
    case DType::kBool: Fill<bool>(tensor, range, rng); break;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128:
      return Unsupported("input '" + spec.name + "' has element type " + std::string(DTypeName(spec.dtype)) +
                         ", which cannot be generated");
  }
  return tensor;
}

}  // namespace

Expected<std::vector<Feeds>> RandomSamples(const std::vector<InputSpec>& inputs, const RandomSampleOptions& options) {
  if (options.samples < 1) return InvalidArgument("--samples: need at least one sample");
  std::set<std::string> names;
  for (const InputSpec& spec : inputs) names.insert(spec.name);
  for (const auto& [name, range] : options.ranges) {
    if (!names.count(name)) return InvalidArgument("range for '" + name + "': the model has no such input");
    const bool empty = range.integral ? std::ceil(range.high) <= std::ceil(range.low) : !(range.high > range.low);
    if (empty || !std::isfinite(range.low) || !std::isfinite(range.high)) {
      return InvalidArgument("range for '" + name + "': need finite LOW < HIGH");
    }
  }
  std::mt19937_64 rng(options.seed);
  std::vector<Feeds> samples(static_cast<size_t>(options.samples));
  for (Feeds& feeds : samples) {
    for (const InputSpec& spec : inputs) {
      if (spec.has_default) continue;
      auto range = options.ranges.find(spec.name);
      Expected<Tensor> tensor = range == options.ranges.end()
                                    ? RandomInput(spec, options.dim_sizes, rng)
                                    : RangedInput(spec, options.dim_sizes, range->second, rng);
      if (!tensor.ok()) return tensor.status();
      feeds[spec.name] = std::move(*tensor);
    }
  }
  return samples;
}

Expected<std::vector<Feeds>> ReadSamples(const std::vector<std::string>& npz_paths,
                                         const std::vector<InputSpec>& inputs) {
  std::set<std::string> names;
  for (const InputSpec& spec : inputs) names.insert(spec.name);
  std::vector<Feeds> samples;
  for (const std::string& path : npz_paths) {
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<NamedTensor> arrays, ReadNpzFile(path));
    Feeds feeds;
    for (NamedTensor& array : arrays) {
      if (!names.count(array.name)) {
        return InvalidArgument(path + ": array '" + array.name + "' is not an input of the model");
      }
      feeds[array.name] = std::move(array.tensor);
    }
    for (const InputSpec& spec : inputs) {
      if (!spec.has_default && !feeds.count(spec.name)) {
        return InvalidArgument(path + ": no array for input '" + spec.name + "' (" + InputSpecToString(spec) + ")");
      }
    }
    samples.push_back(std::move(feeds));
  }
  return samples;
}

}  // namespace onnx_amp
