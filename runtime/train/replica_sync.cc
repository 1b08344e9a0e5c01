#include "runtime/train/replica_sync.h"

#include <cstring>
#include <string>

#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_loop.h"

namespace onnx_amp {
namespace {

// A 64-bit hash over 8-byte words; it only has to tell differing states apart.
class StateHasher {
 public:
  void Add(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (; bytes >= 8; bytes -= 8, p += 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      Mix(word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p, bytes);
    Mix(tail ^ (static_cast<uint64_t>(bytes) << 56));
  }
  template <typename T>
  void AddValue(const T& value) {
    Add(&value, sizeof(value));
  }
  void AddTensor(const Tensor& tensor) { Add(tensor.raw_data(), tensor.bytes()); }
  uint64_t value() const { return hash_; }

 private:
  void Mix(uint64_t word) {
    hash_ ^= word + 0x9e3779b97f4a7c15ULL + (hash_ << 6) + (hash_ >> 2);
    hash_ *= 0xff51afd7ed558ccdULL;
    hash_ ^= hash_ >> 33;
  }
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t ReplicaFingerprint(Trainer& trainer, const DataPosition& position, const TrainingRunOptions& options) {
  StateHasher hasher;
  for (const NamedTensor& weight : trainer.weights()) hasher.AddTensor(weight.tensor);
  for (int k = 0; k < trainer.optimizer().num_slots(); ++k) {
    for (const Tensor& slot : trainer.optimizer().slots(k)) hasher.AddTensor(slot);
  }
  hasher.AddValue(trainer.optimizer().step_count());
  const OptimizerConfig& optimizer = trainer.optimizer().config();
  for (float value : {optimizer.learning_rate, optimizer.momentum, optimizer.beta1, optimizer.beta2, optimizer.rho,
                      optimizer.epsilon, optimizer.weight_decay}) {
    hasher.AddValue(value);
  }
  const LossScalerState& scaler = trainer.scaler().state();
  hasher.AddValue(scaler.scale);
  hasher.AddValue(scaler.growth_tracker);
  hasher.AddValue(scaler.hysteresis_tracker);
  hasher.AddValue(scaler.steps);
  hasher.AddValue(trainer.scaler().config().enabled);
  hasher.AddValue(trainer.scaler().config().dynamic);
  for (int64_t value : {static_cast<int64_t>(position.seed), position.epoch, position.batch, position.global_step,
                        options.batch_size, options.accumulation_steps, options.epochs, options.max_steps,
                        options.checkpoint_every}) {
    hasher.AddValue(value);
  }
  // The graphs carry the policy, the loss and the optimizer's kind.
  const std::string train_graph = trainer.graph().train_model.SerializeAsString();
  const std::string update_graph = trainer.update_model().SerializeAsString();
  hasher.Add(train_graph.data(), train_graph.size());
  hasher.Add(update_graph.data(), update_graph.size());
  return hasher.value();
}

}  // namespace onnx_amp
