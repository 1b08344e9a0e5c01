// 16 float32 lanes as one GCC vector, for loops built once per instruction set with
// ONNX_AMP_CPU_CLONES (ops/common/cpu_clones.h): each clone holds a vector in one
// AVX-512 register, two AVX2 ones or four SSE ones, and does the same operations lane by
// lane, so every CPU gives the same bits (the fused multiply-adds of MulAddLanes
// included). Reductions keep one running value per lane
// (lane l takes elements l, l + 16, ...) and fold the lanes in halves at the end.
//
// The helpers are always inlined into their cloned callers, and so must be every function
// or lambda a clone passes lanes to: a call passing a 64-byte vector takes a different
// ABI in a baseline-built callee than in the AVX-512 clone, and reads garbage. Files
// using them are built with -ffp-contract=off, so that no clone fuses a multiply and an
// add the others round twice, and with -Wno-psabi (GCC warns of that ABI at each inlined
// call all the same, so the warning cannot tell the two apart).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/common/cpu_clones.h"

namespace onnx_amp {

constexpr int kLanes = 16;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
using LaneInts = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));

#define ONNX_AMP_LANES_INLINE inline __attribute__((always_inline))
// The same for a lambda that takes or returns lanes (written after its parameter list).
#define ONNX_AMP_LANES_LAMBDA __attribute__((always_inline))

ONNX_AMP_LANES_INLINE Lanes LoadLanes(const float* values) {
  Lanes lanes;
  std::memcpy(&lanes, values, sizeof(lanes));
  return lanes;
}

ONNX_AMP_LANES_INLINE void StoreLanes(const Lanes& lanes, float* values) { std::memcpy(values, &lanes, sizeof(lanes)); }

ONNX_AMP_LANES_INLINE Lanes SplatLanes(float value) { return Lanes{} + value; }

// 16 lanes of p[i, i + 16), padded with zeros past count.
ONNX_AMP_LANES_INLINE Lanes LoadPadded(const float* p, int64_t i, int64_t count) {
  if (i + kLanes <= count) return LoadLanes(p + i);
  float tail[kLanes] = {};
  std::copy(p + i, p + count, tail);
  return LoadLanes(tail);
}

// y[0, count) = fn(lanes of x at i, i) over 16-lane blocks, the last count % 16 values
// through a copy padded with zeros; y may be x. fn must be always inlined too
// (ONNX_AMP_LANES_LAMBDA).
template <typename Fn>
ONNX_AMP_LANES_INLINE void MapLanes(const float* x, int64_t count, float* y, const Fn& fn) {
  const int64_t body = count - count % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) StoreLanes(fn(LoadLanes(x + i), i), y + i);
  if (body == count) return;
  float tail[kLanes] = {};
  std::copy(x + body, x + count, tail);
  StoreLanes(fn(LoadLanes(tail), body), tail);
  std::copy(tail, tail + (count - body), y + body);
}

// The larger of a and b per lane: a NaN in b is skipped, one in a kept. (A select on a
// NaN test of a as well makes GCC write the loop in scalar code.)
ONNX_AMP_LANES_INLINE Lanes MaxLanes(Lanes a, Lanes b) { return b > a ? b : a; }

// Halves of lanes, for the folds: each step adds (or takes the larger of) the lower and
// the upper half in registers. Folding through an array in memory instead stalled on
// store forwarding (a 64-byte store read back in pieces), which in a softmax over rows of
// 32 cost as much as its exps.
using Lanes8 = float __attribute__((vector_size(8 * sizeof(float))));
using Lanes4 = float __attribute__((vector_size(4 * sizeof(float))));
using Lanes2 = float __attribute__((vector_size(2 * sizeof(float))));

// The lanes folded in halves: 8 sums of pairs (lane l and l + 8), then 4, 2, 1.
ONNX_AMP_LANES_INLINE float FoldSum(Lanes lanes) {
  const Lanes8 eight = __builtin_shufflevector(lanes, lanes, 0, 1, 2, 3, 4, 5, 6, 7) +
                       __builtin_shufflevector(lanes, lanes, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes4 four = __builtin_shufflevector(eight, eight, 0, 1, 2, 3) + __builtin_shufflevector(eight, eight, 4, 5, 6, 7);
  const Lanes2 two = __builtin_shufflevector(four, four, 0, 1) + __builtin_shufflevector(four, four, 2, 3);
  return two[0] + two[1];
}

// The larger of lower lane a and upper lane b per pair, skipping NaN lanes: b where b > a
// or a is NaN.
template <typename Half>
ONNX_AMP_LANES_INLINE Half MaxSkippingNaN(Half a, Half b) {
  return ((b > a) | (a != a)) ? b : a;
}

// The largest lane, skipping NaN lanes (NaN only if all are), folded in halves as FoldSum.
ONNX_AMP_LANES_INLINE float FoldMax(Lanes lanes) {
  const Lanes8 eight = MaxSkippingNaN(__builtin_shufflevector(lanes, lanes, 0, 1, 2, 3, 4, 5, 6, 7),
                                      __builtin_shufflevector(lanes, lanes, 8, 9, 10, 11, 12, 13, 14, 15));
  const Lanes4 four =
      MaxSkippingNaN(__builtin_shufflevector(eight, eight, 0, 1, 2, 3), __builtin_shufflevector(eight, eight, 4, 5, 6, 7));
  const Lanes2 two = MaxSkippingNaN(__builtin_shufflevector(four, four, 0, 1), __builtin_shufflevector(four, four, 2, 3));
  return two[1] > two[0] || two[0] != two[0] ? two[1] : two[0];
}

// floor(x) per lane, for |x| < 2^31.
ONNX_AMP_LANES_INLINE Lanes FloorLanes(Lanes x) {
  const Lanes truncated = __builtin_convertvector(__builtin_convertvector(x, LaneInts), Lanes);
  return truncated > x ? truncated - 1.0f : truncated;
}

// 2^k for integer lanes k in [-126, 127], built in the exponent field.
ONNX_AMP_LANES_INLINE Lanes Pow2Lanes(LaneInts k) {
  const LaneInts bits = (k + 127) << 23;
  Lanes result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

// a * b + c per lane, rounded once (fmaf): one VFMADD in the AVX-512 and x86-64-v3
// clones. The polynomials below step on it: Erf over 262,144 values took 0.30 ms on one
// thread with a multiply and an add per step (rolled or unrolled), 0.23 with it.
// A build without the clones (another compiler) for a target without FMA multiplies and
// adds instead: its bits differ, but it does not call fmaf sixteen times a step.
ONNX_AMP_LANES_INLINE Lanes MulAddLanes(Lanes a, Lanes b, Lanes c) {
#if ONNX_AMP_CPU_CLONES_BUILT || defined(__FMA__)
  Lanes r;
  for (int l = 0; l < kLanes; ++l) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
  return r;
#else
  return a * b + c;
#endif
}

// c[0] x^(N-1) + c[1] x^(N-2) + ... + c[N-1] per lane, by Horner's rule (highest
// coefficient first), each step one fused multiply-add. Unrolled: as a loop, with its
// branch and coefficient loads on the chain of dependent steps, the FMA gained nothing.
template <size_t N>
ONNX_AMP_LANES_INLINE Lanes PolynomialLanes(Lanes x, const float (&c)[N]) {
  Lanes sum = SplatLanes(c[0]);
#pragma GCC unroll 16
  for (size_t i = 1; i < N; ++i) sum = MulAddLanes(sum, x, SplatLanes(c[i]));
  return sum;
}

ONNX_AMP_LANES_INLINE LaneInts BitsOf(Lanes x) {
  LaneInts bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

ONNX_AMP_LANES_INLINE Lanes LanesOfBits(LaneInts bits) {
  Lanes x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

// exp(r) and n for x = n ln 2 + r, |r| <= ln 2 / 2 (ln 2 in two parts, Cody and Waite),
// exp(r) by Cephes' expf polynomial; x in [-87, 88.8] (or NaN), n as integers in k.
ONNX_AMP_LANES_INLINE Lanes ExpOfReduced(Lanes x, LaneInts& k) {
  const Lanes n = FloorLanes(x * 1.44269504088896341f + 0.5f);
  Lanes r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  constexpr float kExpR[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                             4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  k = __builtin_convertvector(n, LaneInts);
  return PolynomialLanes(r, kExpR) * (r * r) + r + 1.0f;
}

constexpr float kExpSmallest = -87.3365447f;  // ln(FLT_MIN)

// exp(x) per lane, within 3 float32 units of roundoff (measured in float_lanes_test):
// exp(r) 2^n (ExpOfReduced), 2^n applied as two factors so that n = 128 still overflows
// to +inf. Results below FLT_MIN (x < -87.34) are 0: Intel CPUs take a microcode assist,
// a hundred cycles and more, for each subnormal result, and an attention mask's -10000
// sends whole rows there. exp(-inf) = 0, exp(+inf) = +inf, NaN stays NaN.
ONNX_AMP_LANES_INLINE Lanes ExpLanes(Lanes x) {
  // Lanes below kExpSmallest compute exp(-87), a normal number, and are set to 0 at the
  // end; lanes above 88.8 overflow.
  Lanes clamped = x < kExpSmallest ? SplatLanes(-87.0f) : x;
  clamped = clamped > 88.8f ? SplatLanes(88.8f) : clamped;
  LaneInts k;
  const Lanes exp_r = ExpOfReduced(clamped, k);
  const LaneInts half = k >> 1;  // n in [-126, 128]: both factors are normal
  Lanes result = exp_r * Pow2Lanes(half) * Pow2Lanes(k - half);
  result = x < kExpSmallest ? SplatLanes(0.0f) : result;
  return x != x ? x : result;
}

// ExpLanes(x) for x <= 0 (or NaN), bit for bit, in fewer steps: with n in [-126, 0], 2^n
// is one normal factor, exact wherever the two are (exp(r) 2^n rounded once either way),
// and nothing overflows. For the softmax (x - max), erf (-x^2) and the sigmoid (-|x|).
ONNX_AMP_LANES_INLINE Lanes ExpNonPositiveLanes(Lanes x) {
  LaneInts k;
  const Lanes exp_r = ExpOfReduced(x < kExpSmallest ? SplatLanes(-87.0f) : x, k);
  Lanes result = exp_r * Pow2Lanes(k);
  result = x < kExpSmallest ? SplatLanes(0.0f) : result;
  return x != x ? x : result;
}

// erf(x) per lane, within 3 float32 units of roundoff (measured in float_lanes_test), from
// polynomials fitted for this code (near-minimax, relative error) on two intervals of
// |x|, both evaluated and one selected per lane:
//   |x| <= 0.875:  erf = x P(x^2), P of degree 5;
//   |x| > 0.875:   erf = 1 - exp(-x^2) Q(|x| - 2.4125), Q of degree 10 fitted to
//                  erfc(x) exp(x^2) on [0.875, 3.95]. Beyond 3.95 erf rounds to +-1.
// erf(-x) = -erf(x) (the sign bit carried over, so erf(-0) = -0), NaN stays NaN.
ONNX_AMP_LANES_INLINE Lanes ErfLanes(Lanes x) {
  const LaneInts sign = BitsOf(x) & static_cast<int32_t>(0x80000000u);
  Lanes a = LanesOfBits(BitsOf(x) & 0x7FFFFFFF);
  a = a > 3.95f ? SplatLanes(3.95f) : a;
  const Lanes s = a * a;
  constexpr float kNearZero[] = {-6.203242228e-04f, 5.032178946e-03f, -2.679146081e-02f,
                                 1.128245518e-01f,  -3.761255145e-01f, 1.128379107e+00f};
  constexpr float kFar[] = {2.041947027e-06f, -8.270538274e-06f, 1.829574103e-05f, -6.375269004e-05f,
                            2.517561079e-04f, -8.624470211e-04f, 2.813633997e-03f, -8.920787834e-03f,
                            2.715671062e-02f, -7.890250534e-02f, 2.175082117e-01f};
  const Lanes near_zero = a * PolynomialLanes(s, kNearZero);
  const Lanes far = 1.0f - ExpNonPositiveLanes(-s) * PolynomialLanes(a - 2.4125f, kFar);
  const Lanes magnitude = a <= 0.875f ? near_zero : far;
  const Lanes result = LanesOfBits(BitsOf(magnitude) | sign);
  return x != x ? x : result;
}

// tanh(x) per lane, within 4 float32 units of roundoff (measured in float_lanes_test):
//   |x| < 0.7:   x P(x^2), P of degree 6 fitted for this code (near-minimax, relative);
//   |x| >= 0.7:  1 - 2 / (exp(2|x|) + 1), which reaches 1 where exp overflows.
// tanh(-x) = -tanh(x) (the sign bit carried over), NaN stays NaN.
ONNX_AMP_LANES_INLINE Lanes TanhLanes(Lanes x) {
  const LaneInts sign = BitsOf(x) & static_cast<int32_t>(0x80000000u);
  const Lanes a = LanesOfBits(BitsOf(x) & 0x7FFFFFFF);
  constexpr float kNearZero[] = {1.879777177e-03f,  -7.858087309e-03f, 2.155568451e-02f, -5.391646549e-02f,
                                 1.333291978e-01f, -3.333331943e-01f, 1.0f};
  const Lanes near_zero = a * PolynomialLanes(a * a, kNearZero);
  const Lanes far = 1.0f - 2.0f / (ExpLanes(a + a) + 1.0f);
  const Lanes magnitude = a < 0.7f ? near_zero : far;
  const Lanes result = LanesOfBits(BitsOf(magnitude) | sign);
  return x != x ? x : result;
}

// 1 / (1 + exp(-x)) per lane, split by sign as the scalar form is (exp of -|x| never
// overflows): e = exp(-|x|), 1 / (1 + e) for x >= 0, e / (1 + e) below. Within 5 units
// of roundoff (exp's 3 and two roundings); results below FLT_MIN (x < -87.3) are 0, as
// exp's are. NaN stays NaN.
ONNX_AMP_LANES_INLINE Lanes SigmoidLanes(Lanes x) {
  const Lanes a = LanesOfBits(BitsOf(x) & 0x7FFFFFFF);
  const Lanes e = ExpNonPositiveLanes(-a);
  const Lanes denominator = 1.0f + e;
  const Lanes positive = 1.0f / denominator;
  const Lanes negative = e / denominator;
  return x >= 0.0f ? positive : negative;
}

// log(x) per lane, within 3 float32 units of roundoff (measured in float_lanes_test):
// x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by Cephes' logf polynomial in m - 1,
// and e ln 2 added in two parts (Cody and Waite). Subnormal x is scaled by 2^25 first.
// log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN stays NaN.
ONNX_AMP_LANES_INLINE Lanes LogLanes(Lanes x) {
  const Lanes subnormal = x < 1.17549435e-38f ? SplatLanes(1.0f) : SplatLanes(0.0f);
  const Lanes scaled = x * (1.0f + subnormal * 33554431.0f);  // 2^25 where subnormal
  const LaneInts bits = BitsOf(scaled);
  // The exponent of m 2^e with m in [0.5, 1), less 25 where the value was scaled.
  Lanes e = __builtin_convertvector(((bits >> 23) & 0xFF) - 126, Lanes) - subnormal * 25.0f;
  Lanes m = LanesOfBits((bits & 0x007FFFFF) | 0x3F000000);
  const Lanes low = m < 0.707106781186547524f ? SplatLanes(1.0f) : SplatLanes(0.0f);
  e = e - low;
  m = m + low * m - 1.0f;  // m - 1, or 2m - 1 below sqrt(1/2): exact either way
  const Lanes z = m * m;
  constexpr float kLogM[] = {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f,
                             -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                             2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
  Lanes y = m * z * PolynomialLanes(m, kLogM);
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  Lanes result = m + y;
  result = result + e * 0.693359375f;
  result = x == 0.0f ? SplatLanes(-std::numeric_limits<float>::infinity()) : result;
  result = x < 0.0f ? SplatLanes(std::numeric_limits<float>::quiet_NaN()) : result;
  // +inf as x > FLT_MAX: GCC writes x == inf as a scalar compare per lane.
  result = x > std::numeric_limits<float>::max() ? x : result;
  return x != x ? x : result;
}

}  // namespace onnx_amp
