// A sum in 16 interleaved partial sums, for the batch statistics of BatchNormalization
// and its gradient: the compiler vectorises it (a single running sum it must not
// reorder, so it adds one term per add latency), and the rounding error grows 16 times
// more slowly over the N x spatial terms of a channel.
#pragma once

#include <cstdint>

namespace onnx_amp {

template <typename Acc>
class LaneSums {
 public:
  // Adds term(i) for i in [0, count).
  template <typename Term>
  void Add(int64_t count, Term term) {
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes_[j] += term(i + j);
    }
    for (int64_t j = 0; i + j < count; ++j) lanes_[j] += term(i + j);
  }
  Acc Total() const {
    Acc total = 0;
    for (Acc lane : lanes_) total += lane;
    return total;
  }

 private:
  static constexpr int64_t kLanes = 16;
  Acc lanes_[kLanes] = {};
};

}  // namespace onnx_amp
