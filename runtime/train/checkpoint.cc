#include "runtime/train/checkpoint.h"

#include <cstring>
#include <map>

#include "runtime/io/npz.h"

namespace onnx_amp {
namespace {

Tensor Int64Array(std::initializer_list<int64_t> values) {
  Tensor tensor = Tensor::Empty(DType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), tensor.data<int64_t>());
  return tensor;
}

Expected<const Tensor*> Find(const std::map<std::string, Tensor>& arrays, const std::string& name, DType dtype,
                             int64_t elements, const std::filesystem::path& path) {
  auto it = arrays.find(name);
  if (it == arrays.end()) return InvalidArgument(path.string() + ": checkpoint has no array '" + name + "'");
  if (it->second.dtype() != dtype || it->second.num_elements() != elements) {
    return InvalidArgument(path.string() + ": checkpoint array '" + name + "' does not match the model");
  }
  return &it->second;
}

}  // namespace

Status SaveCheckpoint(const std::filesystem::path& path, Trainer& trainer, const DataPosition& position) {
  std::vector<NamedTensor> arrays;
  const LossScalerState& s = trainer.scaler().state();
  float scale = s.scale;
  Tensor scale_array = Tensor::Empty(DType::kFloat32, {1});
  std::memcpy(scale_array.raw_data(), &scale, sizeof(float));
  arrays.push_back({"scaler.scale", scale_array});
  arrays.push_back({"scaler.counters", Int64Array({s.growth_tracker, s.hysteresis_tracker, s.steps, s.skipped_steps,
                                                   s.consecutive_skips})});
  arrays.push_back({"optimizer.step", Int64Array({trainer.optimizer().step_count()})});
  arrays.push_back({"data.position", Int64Array({static_cast<int64_t>(position.seed), position.epoch, position.batch,
                                                 position.global_step})});
  if (position.ranks != 1) arrays.push_back({"data.ranks", Int64Array({position.ranks})});
  const std::vector<NamedTensor>& weights = trainer.weights();
  for (size_t p = 0; p < weights.size(); ++p) {
    arrays.push_back({"weight/" + weights[p].name, weights[p].tensor});
    for (int k = 0; k < trainer.optimizer().num_slots(); ++k) {
      arrays.push_back({"slot" + std::to_string(k) + "/" + weights[p].name, trainer.optimizer().slots(k)[p]});
    }
  }
  return WriteNpzFile(path, arrays);
}

Status LoadCheckpoint(const std::filesystem::path& path, Trainer& trainer, DataPosition& position) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<NamedTensor> read, ReadNpzFile(path));
  std::map<std::string, Tensor> arrays;
  for (NamedTensor& array : read) arrays[array.name] = std::move(array.tensor);

  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale, Find(arrays, "scaler.scale", DType::kFloat32, 1, path));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* counters, Find(arrays, "scaler.counters", DType::kInt64, 5, path));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* step, Find(arrays, "optimizer.step", DType::kInt64, 1, path));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, Find(arrays, "data.position", DType::kInt64, 4, path));
  // Written only by data-parallel runs: a single-process checkpoint stays as it was.
  int64_t ranks = 1;
  if (arrays.count("data.ranks") != 0) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* stored, Find(arrays, "data.ranks", DType::kInt64, 1, path));
    ranks = *stored->data<int64_t>();
  }
  std::vector<NamedTensor>& weights = trainer.weights();
  // Check everything before changing anything.
  std::vector<std::pair<const Tensor*, Tensor*>> copies;
  for (size_t p = 0; p < weights.size(); ++p) {
    const int64_t n = weights[p].tensor.num_elements();
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* w, Find(arrays, "weight/" + weights[p].name, DType::kFloat32, n, path));
    copies.push_back({w, &weights[p].tensor});
    for (int k = 0; k < trainer.optimizer().num_slots(); ++k) {
      ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* v,
                                Find(arrays, "slot" + std::to_string(k) + "/" + weights[p].name, DType::kFloat32, n, path));
      copies.push_back({v, &trainer.optimizer().slots(k)[p]});
    }
  }
  const int64_t* c = counters->data<int64_t>();
  LossScalerState state;
  state.scale = *scale->data<float>();
  state.growth_tracker = static_cast<int32_t>(c[0]);
  state.hysteresis_tracker = static_cast<int32_t>(c[1]);
  state.steps = c[2];
  state.skipped_steps = c[3];
  state.consecutive_skips = c[4];
  ONNX_AMP_RETURN_IF_ERROR(trainer.scaler().Restore(state).WithContext(path.string()));
  // The read arrays become the state, in the model's shapes (no copy).
  for (auto& [from, to] : copies) *to = from->Reshaped(to->shape());
  trainer.optimizer().set_step_count(*step->data<int64_t>());
  const int64_t* d = data->data<int64_t>();
  position = {static_cast<uint64_t>(d[0]), d[1], d[2], d[3], ranks};
  return Status::Ok();
}

}  // namespace onnx_amp
