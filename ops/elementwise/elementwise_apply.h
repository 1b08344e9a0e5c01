// Loop drivers shared by the element-wise kernels. The per-element function is
// applied in the compute type C; float16/bfloat16 storage is converted in blocks, so
// a low-precision kernel runs exactly the float32 loop on the rounded inputs and
// rounds each output once. Large tensors are split across the thread pool, and the
// inner loops are built for AVX-512 and AVX2 too (cpu_clones.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/common/block_io.h"
#include "ops/common/cpu_clones.h"
#include "ops/elementwise/broadcast.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {

// Elements per parallel chunk: below this, threading costs more than it saves.
inline constexpr int64_t kParallelGrain = 1 << 15;

template <typename C, typename R, typename Fn>
ONNX_AMP_CPU_CLONES void UnaryRun(const C* in, R* out, int64_t n, const Fn& fn_ref) {
  // A local copy of the functor: its parameters (LeakyRelu's alpha, Clip's bounds) read
  // through the reference could alias `out`, so the loop reloaded them after every store
  // and stayed scalar and branching.
  const Fn fn = fn_ref;
  // `out` is `in` itself (an in-place output) or apart from it, never shifted: ivdep lets
  // the loop vectorise without a runtime overlap check, which the in-place case fails.
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) out[i] = fn(in[i]);
}

// out[i] = fn(in[i]) over n elements; I and O are storage types.
template <typename C, typename I, typename O, typename Fn>
void UnaryMap(ThreadPool& threads, const I* in, O* out, int64_t n, const Fn& fn) {
  using R = decltype(fn(C{}));
  constexpr bool kDirect = std::is_same_v<I, C> && std::is_same_v<O, R>;
  threads.ParallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    if constexpr (kDirect) {
      UnaryRun(in + begin, out + begin, end - begin, fn);
    } else {
      C in_block[kBlockSize];
      R out_block[kBlockSize];
      for (int64_t i = begin; i < end; i += kBlockSize) {
        const int64_t count = std::min(kBlockSize, end - i);
        LoadAs(in + i, in_block, count);
        UnaryRun(in_block, out_block, count, fn);
        StoreAs(out_block, out + i, count);
      }
    }
  });
}

// Strides are 0 (broadcast scalar) or 1; the four cases are separate loops so the
// compiler vectorises each. `out` is an operand of stride 1 itself or apart from both.
template <typename C, typename R, typename Fn>
ONNX_AMP_CPU_CLONES void BinaryRun(const C* a, int64_t stride_a, const C* b, int64_t stride_b, R* out, int64_t n,
                      const Fn& fn_ref) {
  const Fn fn = fn_ref;  // a local copy, as in UnaryRun
  if (stride_a == 1 && stride_b == 1) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b[i]);
  } else if (stride_a == 1) {
    const C b0 = b[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b0);
  } else if (stride_b == 1) {
    const C a0 = a[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a0, b[i]);
  } else {
    const R value = fn(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = value;
  }
}

// The elements operand k of `plan` holds: the product of the dims it is not broadcast
// along. As many as the output's means it is laid out as the output is.
inline int64_t OperandElements(const BroadcastPlan& plan, int k) {
  int64_t count = 1;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    if (plan.strides[d][k] != 0) count *= plan.dims[d];
  }
  return count;
}

// A broadcast operand of at most this many elements is converted whole, once, before a
// converting loop, instead of run by run.
inline constexpr int64_t kConvertWholeElements = int64_t{1} << 16;

// The period of operand k when its offset at output position p is p mod period: it is
// broadcast along leading dims only (a bias row under every token); 0 otherwise.
inline int64_t OperandPeriod(const BroadcastPlan& plan, int k) {
  int64_t period = 1;
  size_t d = plan.dims.size();
  for (; d > 0 && plan.strides[d - 1][k] != 0; --d) {
    if (plan.strides[d - 1][k] != period) return 0;
    period *= plan.dims[d - 1];
  }
  for (size_t leading = 0; leading < d; ++leading) {
    if (plan.strides[leading][k] != 0) return 0;
  }
  return period;
}

// Operand k of a converting loop: `data` of storage type S, or `whole` (its every
// element converted to C) where that was made.
template <typename C, typename S>
struct ConvertingOperand {
  const S* data = nullptr;
  int k = 0;
  int64_t elements = 0;
  bool full = false;  // laid out as the output
  // A periodic operand of at most a block's elements (OperandPeriod) is widened into
  // `whole` repeated, so that any kBlockSize outputs read it in place from p mod period.
  int64_t period = 0;
  std::vector<C> whole;

  ConvertingOperand(const BroadcastPlan& plan, const S* operand, int index)
      : data(operand), k(index), elements(OperandElements(plan, index)), full(elements == plan.total) {
    if (full || elements > kConvertWholeElements) return;
    whole.resize(static_cast<size_t>(elements));
    LoadAs(data, whole.data(), elements);
    if (elements > 1 && elements <= kBlockSize && OperandPeriod(plan, k) == elements) {
      period = elements;
      const int64_t copies = (kBlockSize + 2 * period - 2) / period;
      whole.resize(static_cast<size_t>(copies * period));
      for (int64_t copy = 1; copy < copies; ++copy) {
        std::copy_n(whole.begin(), period, whole.begin() + copy * period);
      }
    }
  }

  // The operand's values at output positions [pos, pos + count), count <= kBlockSize: in
  // place in the repeated `whole`, else gathered into `block` by one conversion where it
  // is full, copied run by run from `whole` (or converted run by run). A one-element
  // operand gives block[0] alone (BinaryRun reads it with stride 0).
  const C* Values(const BroadcastPlan& plan, int64_t pos, int64_t count, C* block) const {
    if (period != 0) return whole.data() + pos % period;
    if (full) {
      LoadAs(data + pos, block, count);
      return block;
    }
    if (elements == 1) {
      block[0] = whole[0];
      return block;
    }
    const int64_t stride = plan.inner_strides[k];
    ForEachRun(plan, pos, pos + count, [&](const OperandOffsets& offsets, int64_t at, int64_t length) {
      C* to = block + (at - pos);
      if (!whole.empty()) {
        const C* from = whole.data() + offsets[k];
        if (stride == 1) {
          std::copy(from, from + length, to);
        } else {
          std::fill(to, to + length, from[0]);
        }
      } else if (stride == 1) {
        LoadAs(data + offsets[k], to, length);
      } else {
        LoadAs(data + offsets[k], to, 1);
        std::fill(to + 1, to + length, to[0]);
      }
    });
    return block;
  }
};

// out = fn(a, b) with broadcasting per `plan` (operands 0 and 1); A, B and O are
// storage types, both operands are converted to C. Converting, each block of kBlockSize
// outputs is gathered into float32 blocks first, so that a short innermost run (a bias
// row of 64 added to every token) costs no conversion calls of its own: a bfloat16 bias
// Add ran at 2.4x the float32 one's time run by run.
template <typename C, typename A, typename B, typename O, typename Fn>
void BinaryBroadcast(ThreadPool& threads, const BroadcastPlan& plan, const A* a, const B* b, O* out,
                     const Fn& fn) {
  using R = decltype(fn(C{}, C{}));
  constexpr bool kDirect = std::is_same_v<A, C> && std::is_same_v<B, C> && std::is_same_v<O, R>;
  if constexpr (kDirect) {
    const int64_t stride_a = plan.inner_strides[0];
    const int64_t stride_b = plan.inner_strides[1];
    threads.ParallelFor(plan.total, kParallelGrain, [&](int64_t begin, int64_t end) {
      ForEachRun(plan, begin, end, [&](const OperandOffsets& offsets, int64_t pos, int64_t length) {
        BinaryRun(a + offsets[0], stride_a, b + offsets[1], stride_b, out + pos, length, fn);
      });
    });
  } else {
    if (plan.total == 0) return;
    const ConvertingOperand<C, A> first(plan, a, 0);
    const ConvertingOperand<C, B> second(plan, b, 1);
    const int64_t stride_a = first.elements == 1 ? 0 : 1, stride_b = second.elements == 1 ? 0 : 1;
    threads.ParallelFor(plan.total, kParallelGrain, [&](int64_t begin, int64_t end) {
      C a_block[kBlockSize];
      C b_block[kBlockSize];
      R out_block[kBlockSize];
      for (int64_t pos = begin; pos < end; pos += kBlockSize) {
        const int64_t count = std::min(kBlockSize, end - pos);
        const C* a_values = first.Values(plan, pos, count, a_block);
        const C* b_values = second.Values(plan, pos, count, b_block);
        BinaryRun(a_values, stride_a, b_values, stride_b, out_block, count, fn);
        StoreAs(out_block, out + pos, count);
      }
    });
  }
}

}  // namespace onnx_amp
