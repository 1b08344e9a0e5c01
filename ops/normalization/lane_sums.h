// Sums in 16 interleaved partial sums, for the batch statistics of BatchNormalization
// and its gradient: the compiler vectorises them (a single running sum it must not
// reorder, so it adds one term per add latency), and the rounding error grows 16 times
// more slowly over the N x spatial terms of a channel.
//
// A channel's terms are summed in kBatchChunks runs of consecutive images, each into
// lanes of its own (lane = pixel % 16 within an image, terms in (n, pixel) order), and the
// runs' lanes are then added in run order and totalled in lane order. The runs depend on
// the batch size alone, never on the thread count, so every kernel gets the same bits;
// a channels-last kernel, which reads all channels of a pixel at once, gives each
// thread whole runs, contiguous in memory, instead of a share of every pixel block.
#pragma once

#include <cstdint>

namespace onnx_amp {

constexpr int64_t kLaneCount = 16;
constexpr int64_t kBatchChunks = 16;

// The first image of run `chunk` of a batch of `batch` images (chunk == kBatchChunks: the
// batch size); a run is empty when the batch has fewer images than runs.
constexpr int64_t BatchChunkBegin(int64_t batch, int64_t chunk) { return batch * chunk / kBatchChunks; }

template <typename Acc>
class LaneSums {
 public:
  // Adds term(i) for i in [0, count): the terms of one image.
  template <typename Term>
  void Add(int64_t count, Term term) {
    int64_t i = 0;
    for (; i + kLaneCount <= count; i += kLaneCount) {
      for (int64_t j = 0; j < kLaneCount; ++j) lanes_[j] += term(i + j);
    }
    for (int64_t j = 0; i + j < count; ++j) lanes_[j] += term(i + j);
  }
  // Adds another run's lanes, lane by lane.
  void Merge(const LaneSums& run) {
    for (int64_t j = 0; j < kLaneCount; ++j) lanes_[j] += run.lanes_[j];
  }
  Acc Total() const {
    Acc total = 0;
    for (Acc lane : lanes_) total += lane;
    return total;
  }

 private:
  Acc lanes_[kLaneCount] = {};
};

// A channel's sum over a batch, image by image in order, by the runs above.
template <typename Acc>
class BatchLaneSums {
 public:
  explicit BatchLaneSums(int64_t batch) : batch_(batch) {}
  // Adds term(i) for i in [0, count) of image n; images come in order.
  template <typename Term>
  void Add(int64_t n, int64_t count, Term term) {
    if (n >= run_end_) {
      runs_.Merge(run_);
      run_ = {};
      while (n >= run_end_) run_end_ = BatchChunkBegin(batch_, ++chunk_ + 1);
    }
    run_.Add(count, term);
  }
  Acc Total() const {
    LaneSums<Acc> all = runs_;
    all.Merge(run_);
    return all.Total();
  }

 private:
  int64_t batch_;
  int64_t chunk_ = 0;
  int64_t run_end_ = BatchChunkBegin(batch_, 1);
  LaneSums<Acc> runs_;  // the finished runs, merged
  LaneSums<Acc> run_;   // the current run
};

}  // namespace onnx_amp
