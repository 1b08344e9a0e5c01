// The activation functions of RNN / GRU / LSTM (the `activations`, `activation_alpha`
// and `activation_beta` attributes). Each takes and returns float32: gate math is
// float32 whatever the tensors' dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

enum class RnnActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;

  void ApplyInPlace(float* values, int64_t count) const;
};

// The node's activations, `defaults.size()` per direction, forward direction first.
// A bidirectional node may list one direction's functions, used for both (as ONNX
// Runtime accepts). activation_alpha / activation_beta are consumed in list order by
// the functions that take them; a function left without one gets its ONNX operator's
// default (Affine 1/0, ScaledTanh 1/1, LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid
// 0.2/0.5, Elu 1). Names match case-insensitively.
Expected<std::vector<RnnActivation>> ReadRnnActivations(const KernelContext& context, int64_t directions,
                                                        const std::vector<RnnActivationKind>& defaults);

}  // namespace onnx_amp
