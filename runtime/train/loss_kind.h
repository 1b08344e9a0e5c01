// The losses the trainer appends to a model (training_graph.h builds them).
#pragma once

#include <string>
#include <string_view>

#include "runtime/core/status.h"

namespace onnx_amp {

enum class LossKind {
  kCrossEntropy,  // softmax cross-entropy on logits, sparse int64 labels, mean
  kMse,           // mean squared error against a float target of the output's shape
  kNll,           // negative log-likelihood on log-probabilities, sparse int64 labels, mean
};

inline Expected<LossKind> ParseLossKind(std::string_view name) {
  if (name == "cross_entropy") return LossKind::kCrossEntropy;
  if (name == "mse") return LossKind::kMse;
  if (name == "nll") return LossKind::kNll;
  return InvalidArgument("--loss '" + std::string(name) + "': expected cross_entropy, mse or nll");
}

}  // namespace onnx_amp
