// A ReplicaSync that forwards every call to another (a GradientSync, a DeviceGradientSync):
// the base of test syncs that watch or alter what one or two calls see and leave the rest
// to the real one.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "runtime/train/replica_sync.h"

namespace onnx_amp::testing {

class ForwardingSync : public ReplicaSync {
 public:
  explicit ForwardingSync(ReplicaSync& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int ranks() const override { return inner_.ranks(); }
  void PlanGradients(std::span<const int64_t> elements, std::span<const size_t> order) override {
    inner_.PlanGradients(elements, order);
  }
  bool overlaps_backward() const override { return inner_.overlaps_backward(); }
  Status GradientReady(size_t index, const Tensor& gradient, int64_t step) override {
    return inner_.GradientReady(index, gradient, step);
  }
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override {
    return inner_.SumGradients(gradients, loss_sum, step);
  }
  Status AgreeOnSkip(bool& skip, int64_t& first, int64_t step) override {
    return inner_.AgreeOnSkip(skip, first, step);
  }
  Status SumValues(std::span<double> values, std::string_view what) override { return inner_.SumValues(values, what); }
  Status CheckSameState(uint64_t fingerprint, std::string_view what) override {
    return inner_.CheckSameState(fingerprint, what);
  }

 protected:
  ReplicaSync& inner_;
};

}  // namespace onnx_amp::testing
