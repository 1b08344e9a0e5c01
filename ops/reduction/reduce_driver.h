// Runs a reduction kind (reduce_math.h) over a ReducePlan. Each output folds its K
// inputs in index order, so a result does not depend on the thread split.
// float16/bfloat16 data is widened to float32 in blocks as it is read.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/common/block_io.h"
#include "ops/common/column_sums.h"
#include "ops/reduction/lane_extremum.h"
#include "ops/reduction/reduce_math.h"
#include "ops/reduction/reduce_plan.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {

// Work per parallel chunk, in input elements.
inline constexpr int64_t kReduceGrain = 1 << 15;
// Outputs per chunk at least, where each output's inputs run down a column (reduced dims
// before the kept inner ones): a chunk then reads its rows in runs this long. Chunks of
// 32 columns of a [1024, 4096] bias gradient read 64 bytes a row, a new page every
// other row, and made a call per 32 values to widen bfloat16 ones.
inline constexpr int64_t kColumnsPerChunk = 1024;

template <typename A, typename S>
inline A LoadOne(const S* p) {
  if constexpr (kIsLowPrecision<S>) return static_cast<A>(p->ToFloat());
  else return static_cast<A>(*p);
}

// Max and min of float32, float16 and bfloat16 rows take the lanes (lane_extremum.h),
// which give the in-order fold's bits except where the answer is +-0 or NaN.
template <typename Kind, typename A>
inline constexpr bool kLaneExtremum =
    std::is_same_v<A, float> && (std::is_same_v<Kind, ReduceMaxKind> || std::is_same_v<Kind, ReduceMinKind>);

// acc folded over `count` contiguous values.
template <typename Kind, typename A, typename S>
inline A FoldRow(A acc, const S* row, int64_t count, A shift) {
  if constexpr (kLaneExtremum<Kind, A>) {
    constexpr bool kMax = std::is_same_v<Kind, ReduceMaxKind>;
    LaneExtremum lanes{acc, true};
    if constexpr (kIsLowPrecision<S>) {
      float block[kBlockSize];
      for (int64_t k0 = 0; k0 < count && lanes.exact; k0 += kBlockSize) {
        const int64_t n = std::min(kBlockSize, count - k0);
        LoadAs(row + k0, block, n);
        lanes = LaneMaxOrMin(kMax, block, n, lanes.value);
      }
    } else {
      lanes = LaneMaxOrMin(kMax, row, count, acc);
    }
    if (lanes.exact) return lanes.value;
  }
  if constexpr (kIsLowPrecision<S>) {
    float block[kBlockSize];
    for (int64_t k0 = 0; k0 < count; k0 += kBlockSize) {
      const int64_t n = std::min(kBlockSize, count - k0);
      LoadAs(row + k0, block, n);
      for (int64_t k = 0; k < n; ++k) acc = Kind::Step(acc, static_cast<A>(block[k]), shift);
    }
  } else {
    for (int64_t k = 0; k < count; ++k) acc = Kind::Step(acc, static_cast<A>(row[k]), shift);
  }
  return acc;
}

// acc[i] folded with row[i] for i < width (one step of several outputs at once).
template <typename Kind, typename A, typename S>
inline void StepColumns(A* acc, const S* row, int64_t width, const A* shift) {
  if constexpr (std::is_same_v<Kind, ReduceSumKind> && std::is_same_v<A, float> &&
                (std::is_same_v<S, float> || kIsLowPrecision<S>)) {
    AddRowToSums(row, acc, width);
  } else if constexpr (kIsLowPrecision<S>) {
    float block[kBlockSize];
    for (int64_t i0 = 0; i0 < width; i0 += kBlockSize) {
      const int64_t n = std::min(kBlockSize, width - i0);
      LoadAs(row + i0, block, n);
      for (int64_t i = 0; i < n; ++i) {
        acc[i0 + i] = Kind::Step(acc[i0 + i], static_cast<A>(block[i]), shift ? shift[i0 + i] : A(0));
      }
    }
  } else {
    for (int64_t i = 0; i < width; ++i) acc[i] = Kind::Step(acc[i], static_cast<A>(row[i]), shift ? shift[i] : A(0));
  }
}

// out[m] = Kind::Final(fold of Kind::Step over the K inputs of output m). `shift` is
// null or one value per output (ReduceLogSumExp).
template <typename Kind, typename A, typename S>
void ReduceInto(ThreadPool& threads, const ReducePlan& plan, const S* x, const A* shift, A* out) {
  const int64_t k_count = plan.reduced;
  int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(k_count, 1));
  if (plan.blocked && plan.inner > 1) grain = std::max(grain, std::min(plan.inner, kColumnsPerChunk));
  auto shift_of = [&](int64_t m) { return shift ? shift[m] : A(0); };
  threads.ParallelFor(plan.outputs, grain, [&](int64_t begin, int64_t end) {
    if (!plan.blocked) {
      for (int64_t m = begin; m < end; ++m) {
        const S* base = x + plan.output_offsets[m];
        const A s = shift_of(m);
        A acc = Kind::template Init<A>();
        for (int64_t k = 0; k < k_count; ++k) acc = Kind::Step(acc, LoadOne<A>(base + plan.step_offsets[k]), s);
        out[m] = Kind::Final(acc, k_count, s);
      }
      return;
    }
    const int64_t inner = plan.inner;
    if (inner == 1) {
      for (int64_t m = begin; m < end; ++m) {
        const A s = shift_of(m);
        out[m] = Kind::Final(FoldRow<Kind>(Kind::template Init<A>(), x + m * k_count, k_count, s), k_count, s);
      }
      return;
    }
    // Outputs [begin, end) split by outer index; each piece accumulates a run of inner
    // positions at once, reading the input rows with unit stride.
    std::vector<A> acc;
    for (int64_t m = begin; m < end;) {
      const int64_t o = m / inner;
      const int64_t i0 = m % inner;
      const int64_t width = std::min(inner - i0, end - m);
      acc.assign(width, Kind::template Init<A>());
      const A* s = shift ? shift + m : nullptr;
      for (int64_t k = 0; k < k_count; ++k) StepColumns<Kind>(acc.data(), x + (o * k_count + k) * inner + i0, width, s);
      for (int64_t i = 0; i < width; ++i) out[m + i] = Kind::Final(acc[i], k_count, s ? s[i] : A(0));
      m += width;
    }
  });
}

}  // namespace onnx_amp
