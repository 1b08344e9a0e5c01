// Per-element steps of the Reduce* ops, callable from host and device code. A is the
// accumulator type: float for float32/float16/bfloat16 data (the float32-accumulation
// contract), double for float64, int64/uint64 for integers. `shift` is the per-output
// maximum for ReduceLogSumExp (0 for the others), so exp never overflows.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/core/host_device.h"

namespace onnx_amp {

struct ReduceSumKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc + x; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
struct ReduceMeanKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc + x; }
  // An integer mean truncates, as casting NumPy's float mean back does.
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t count, A) {
    if constexpr (std::is_integral_v<A>) return count == 0 ? A(0) : acc / static_cast<A>(count);
    else return acc / static_cast<A>(count);
  }
};
struct ReduceProdKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(1); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc * x; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
// Max/Min start from the identity of an empty set (-inf / +inf, or the integer limits)
// and propagate NaN.
struct ReduceMaxKind {
  template <typename A> ONNX_AMP_HD static A Init() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return (x > acc || x != x) ? x : acc; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
struct ReduceMinKind {
  template <typename A> ONNX_AMP_HD static A Init() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return (x < acc || x != x) ? x : acc; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
struct ReduceL1Kind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) {
    if constexpr (std::is_unsigned_v<A>) return acc + x;
    else return acc + (x < A(0) ? A(-x) : x);
  }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
struct ReduceSumSquareKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc + x * x; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return acc; }
};
struct ReduceL2Kind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc + x * x; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return std::sqrt(acc); }
};
struct ReduceLogSumKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return acc + x; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) { return std::log(acc); }
};
// log(sum(exp(x - m))) + m with m the largest finite input (the ONNX reference's
// shift); an all-infinite or empty slice uses m = 0.
struct ReduceLogSumExpKind {
  template <typename A> ONNX_AMP_HD static A Init() { return A(0); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A shift) { return acc + std::exp(x - shift); }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A shift) { return std::log(acc) + shift; }
};

// The shift of ReduceLogSumExp: the largest finite value, 0 when there is none.
struct ReduceFiniteMaxKind {
  template <typename A> ONNX_AMP_HD static A Init() { return -std::numeric_limits<A>::infinity(); }
  template <typename A> ONNX_AMP_HD static A Step(A acc, A x, A) { return (x > acc && std::isfinite(x)) ? x : acc; }
  template <typename A> ONNX_AMP_HD static A Final(A acc, int64_t, A) {
    return acc == -std::numeric_limits<A>::infinity() ? A(0) : acc;
  }
};

}  // namespace onnx_amp
