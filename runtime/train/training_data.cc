#include "runtime/train/training_data.h"

#include <cstring>
#include <map>
#include <random>

#include "runtime/io/npz.h"
#include "runtime/train/idx_dataset.h"

namespace onnx_amp {
namespace {

Expected<Tensor> FeaturesToFloat(const Tensor& x, const std::string& label) {
  if (x.rank() < 1) return InvalidArgument(label + ": features need a leading sample axis");
  Tensor out = Tensor::Empty(DType::kFloat32, x.shape());
  float* to = out.data<float>();
  const int64_t n = x.num_elements();
  switch (x.dtype()) {
    case DType::kUInt8:
      for (int64_t i = 0; i < n; ++i) to[i] = static_cast<float>(x.data<uint8_t>()[i]) / 255.0f;
      return out;
    case DType::kFloat32:
      std::memcpy(to, x.raw_data(), x.bytes());
      return out;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) to[i] = static_cast<float>(x.data<double>()[i]);
      return out;
    default:
      return InvalidArgument(label + ": features must be uint8, float32 or float64");
  }
}

Expected<Tensor> LabelsFromArray(const Tensor& y, const std::string& label) {
  const int64_t n = y.num_elements();
  switch (y.dtype()) {
    case DType::kInt64:
      return y;
    case DType::kInt32:
    case DType::kUInt8: {
      Tensor out = Tensor::Empty(DType::kInt64, {n});
      for (int64_t i = 0; i < n; ++i) {
        out.data<int64_t>()[i] = y.dtype() == DType::kInt32 ? y.data<int32_t>()[i] : y.data<uint8_t>()[i];
      }
      return out;
    }
    case DType::kFloat32:
      return y;
    default:
      return InvalidArgument(label + ": labels must be int64, int32, uint8 or float32");
  }
}

Expected<Dataset> DatasetFromArrays(const std::map<std::string, Tensor>& arrays, const std::string& x_name,
                                    const std::string& y_name, const std::string& path) {
  auto x = arrays.find(x_name);
  auto y = arrays.find(y_name);
  if (x == arrays.end() || y == arrays.end()) {
    return InvalidArgument(path + ": expected arrays '" + x_name + "' and '" + y_name + "'");
  }
  Dataset data;
  ONNX_AMP_ASSIGN_OR_RETURN(data.features, FeaturesToFloat(x->second, path + ": " + x_name));
  ONNX_AMP_ASSIGN_OR_RETURN(data.labels, LabelsFromArray(y->second, path + ": " + y_name));
  if (data.labels.rank() < 1 || data.labels.dim(0) != data.features.dim(0)) {
    return InvalidArgument(path + ": '" + x_name + "' and '" + y_name + "' hold different sample counts");
  }
  return data;
}

}  // namespace

Expected<TrainingData> LoadTrainingData(const std::filesystem::path& path) {
  TrainingData result;
  if (std::filesystem::is_directory(path)) {
    ONNX_AMP_ASSIGN_OR_RETURN(TrainEvalData idx, LoadIdxFolder(path));
    result.train = {std::move(idx.train.features), std::move(idx.train.labels)};
    if (idx.eval) result.eval = Dataset{std::move(idx.eval->features), std::move(idx.eval->labels)};
    return result;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<NamedTensor> read, ReadNpzFile(path));
  std::map<std::string, Tensor> arrays;
  for (NamedTensor& array : read) arrays[array.name] = std::move(array.tensor);
  ONNX_AMP_ASSIGN_OR_RETURN(result.train, DatasetFromArrays(arrays, "x", "y", path.string()));
  if (arrays.count("x_test")) {
    ONNX_AMP_ASSIGN_OR_RETURN(Dataset eval, DatasetFromArrays(arrays, "x_test", "y_test", path.string()));
    result.eval = std::move(eval);
  }
  return result;
}

Dataset TakeFirst(const Dataset& data, int64_t count) {
  if (count <= 0 || count >= data.size()) return data;
  auto first = [count](const Tensor& t) {
    Shape shape = t.shape();
    shape[0] = count;
    return Tensor(t.dtype(), shape, t.buffer());
  };
  return {first(data.features), first(data.labels)};
}

std::vector<int64_t> EpochOrder(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 generator(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
  // Fisher-Yates with our own index draw: std::shuffle's sequence differs between libraries.
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(generator() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

Expected<Batch> MakeBatch(const Dataset& data, std::span<const int64_t> indices, const Shape& sample_shape,
                          LossKind loss, int64_t classes) {
  const int64_t b = static_cast<int64_t>(indices.size());
  const int64_t sample = NumElements(sample_shape);
  const int64_t stored = data.features.num_elements() / std::max<int64_t>(data.size(), 1);
  if (sample != stored) {
    return InvalidArgument("a data sample has " + std::to_string(stored) + " values; the model's input takes " +
                           ShapeToString(sample_shape));
  }
  Shape shape{b};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  Batch batch;
  batch.data = Tensor::Empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < b; ++i) {
    std::memcpy(batch.data.data<float>() + i * sample, data.features.data<float>() + indices[i] * sample,
                sample * sizeof(float));
  }
  const bool sparse_labels = data.labels.dtype() == DType::kInt64;
  switch (loss) {
    case LossKind::kCrossEntropy:
    case LossKind::kNll:
      if (!sparse_labels) return InvalidArgument("cross_entropy and nll need integer class labels");
      batch.target = Tensor::Empty(DType::kInt64, {b, 1});
      for (int64_t i = 0; i < b; ++i) {
        const int64_t label = data.labels.data<int64_t>()[indices[i]];
        if (label < 0 || label >= classes) {
          return InvalidArgument("label " + std::to_string(label) + " is outside [0, " + std::to_string(classes) + ")");
        }
        batch.target.data<int64_t>()[i] = label;
      }
      return batch;
    case LossKind::kMse: {
      if (sparse_labels) {
        batch.target = Tensor::Zeros(DType::kFloat32, {b, classes});
        for (int64_t i = 0; i < b; ++i) {
          const int64_t label = data.labels.data<int64_t>()[indices[i]];
          if (label < 0 || label >= classes) return InvalidArgument("label " + std::to_string(label) + " out of range");
          batch.target.data<float>()[i * classes + label] = 1.0f;
        }
        return batch;
      }
      const int64_t per = data.labels.num_elements() / std::max<int64_t>(data.size(), 1);
      if (per != classes) return InvalidArgument("mse targets must have the model output's size per sample");
      batch.target = Tensor::Empty(DType::kFloat32, {b, per});
      for (int64_t i = 0; i < b; ++i) {
        std::memcpy(batch.target.data<float>() + i * per, data.labels.data<float>() + indices[i] * per, per * sizeof(float));
      }
      return batch;
    }
  }
  return InternalError("unknown loss");
}

}  // namespace onnx_amp
