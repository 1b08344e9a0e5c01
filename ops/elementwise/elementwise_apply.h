// Loop drivers shared by the element-wise kernels. The per-element function is
// applied in the compute type C; float16/bfloat16 storage is converted in blocks, so
// a low-precision kernel runs exactly the float32 loop on the rounded inputs and
// rounds each output once. Large tensors are split across the thread pool, and the
// inner loops are built for AVX-512 and AVX2 too (cpu_clones.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

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

// out = fn(a, b) with broadcasting per `plan` (operands 0 and 1); A, B and O are
// storage types, both operands are converted to C.
template <typename C, typename A, typename B, typename O, typename Fn>
void BinaryBroadcast(ThreadPool& threads, const BroadcastPlan& plan, const A* a, const B* b, O* out,
                     const Fn& fn) {
  using R = decltype(fn(C{}, C{}));
  constexpr bool kDirect = std::is_same_v<A, C> && std::is_same_v<B, C> && std::is_same_v<O, R>;
  const int64_t stride_a = plan.inner_strides[0];
  const int64_t stride_b = plan.inner_strides[1];
  threads.ParallelFor(plan.total, kParallelGrain, [&](int64_t begin, int64_t end) {
    ForEachRun(plan, begin, end, [&](const OperandOffsets& offsets, int64_t pos, int64_t length) {
      if constexpr (kDirect) {
        BinaryRun(a + offsets[0], stride_a, b + offsets[1], stride_b, out + pos, length, fn);
      } else {
        C a_block[kBlockSize];
        C b_block[kBlockSize];
        R out_block[kBlockSize];
        for (int64_t i = 0; i < length; i += kBlockSize) {
          const int64_t count = std::min(kBlockSize, length - i);
          LoadAs(a + offsets[0] + i * stride_a, a_block, stride_a ? count : 1);
          LoadAs(b + offsets[1] + i * stride_b, b_block, stride_b ? count : 1);
          BinaryRun(a_block, stride_a, b_block, stride_b, out_block, count, fn);
          StoreAs(out_block, out + pos + i, count);
        }
      }
    });
  });
}

}  // namespace onnx_amp
