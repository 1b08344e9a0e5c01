// Per-element math of the element-wise ops, as functors callable from host and device
// code. C is the compute type: float (also for float16/bfloat16 storage), double, or
// an integer type for the ops that accept integers. Attributes are members.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/core/host_device.h"

namespace onnx_amp {

// ---- unary math ----
struct AbsOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<C>) return x;
    else return x < 0 ? static_cast<C>(-x) : x;
  }
};
struct NegOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return static_cast<C>(-x); }
};
struct SignOp {
  // +-0 give +0; NaN stays NaN.
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    return x > C(0) ? C(1) : (x < C(0) ? static_cast<C>(-1) : (x == x ? C(0) : x));
  }
};
struct FloorOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::floor(x); } };
struct CeilOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::ceil(x); } };
// Round half to even (the default rounding mode).
struct RoundOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::nearbyint(x); } };
struct ReciprocalOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return C(1) / x; } };
struct SqrtOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::sqrt(x); } };
struct ExpOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::exp(x); } };
struct LogOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::log(x); } };
struct SinOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::sin(x); } };
struct CosOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::cos(x); } };
struct TanOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::tan(x); } };
struct AsinOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::asin(x); } };
struct AcosOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::acos(x); } };
struct AtanOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::atan(x); } };
struct SinhOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::sinh(x); } };
struct CoshOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::cosh(x); } };
struct AsinhOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::asinh(x); } };
struct AcoshOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::acosh(x); } };
struct AtanhOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::atanh(x); } };
struct ErfOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::erf(x); } };
struct IsNaNOp { template <typename C> ONNX_AMP_HD bool operator()(C x) const { return x != x; } };
struct IsInfOp {
  bool detect_negative = true;
  bool detect_positive = true;
  template <typename C> ONNX_AMP_HD bool operator()(C x) const {
    return (detect_positive && x == std::numeric_limits<C>::infinity()) ||
           (detect_negative && x == -std::numeric_limits<C>::infinity());
  }
};

// ---- activations ----
// Relu keeps NaN (as max(x, 0) in the ONNX reference).
struct ReluOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
struct LeakyReluOp {
  float alpha = 0.01f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return x < C(0) ? static_cast<C>(alpha) * x : x; }
};
// PRelu is binary: the slope broadcasts against x.
struct PReluOp {
  template <typename C> ONNX_AMP_HD C operator()(C x, C slope) const { return x < C(0) ? slope * x : x; }
};
struct EluOp {
  float alpha = 1.0f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x;
  }
};
struct SeluOp {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    const C g = static_cast<C>(gamma);
    return x > C(0) ? g * x : g * (static_cast<C>(alpha) * std::expm1(x));
  }
};
struct CeluOp {
  float alpha = 1.0f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return x > C(0) ? x : a * std::expm1(x / a);
  }
};
struct SigmoidOp {
  // Split by sign so exp never overflows.
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  }
};
struct HardSigmoidOp {
  float alpha = 0.2f;
  float beta = 0.5f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    const C y = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return y > C(1) ? C(1) : (y < C(0) ? C(0) : y);
  }
};
struct HardSwishOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    const C y = x / C(6) + C(0.5);
    return x * (y > C(1) ? C(1) : (y < C(0) ? C(0) : y));
  }
};
// log(1 + exp(x)) without overflow.
struct SoftplusOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};
struct SoftsignOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
};
struct TanhOp { template <typename C> ONNX_AMP_HD C operator()(C x) const { return std::tanh(x); } };
struct ThresholdedReluOp {
  float alpha = 1.0f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return x > static_cast<C>(alpha) ? x : C(0); }
};
struct GeluOp {
  bool tanh_approximation = false;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    if (tanh_approximation) {
      const C k = static_cast<C>(0.79788456080286535588);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + static_cast<C>(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.70710678118654752440)));
  }
};
struct MishOp {
  template <typename C> ONNX_AMP_HD C operator()(C x) const { return x * std::tanh(SoftplusOp{}(x)); }
};
struct ShrinkOp {
  float bias = 0.0f;
  float lambd = 0.5f;
  template <typename C> ONNX_AMP_HD C operator()(C x) const {
    if (x < static_cast<C>(-lambd)) return static_cast<C>(x + static_cast<C>(bias));
    if (x > static_cast<C>(lambd)) return static_cast<C>(x - static_cast<C>(bias));
    return C(0);
  }
};

// ---- activation slopes: the fused gradients compute dX = dY * slope(V) in float32,
// V being the forward input X or output Y, whichever the gradient op reads ----
// relu'(x) = 1 for x > 0, else 0; the same test at y = relu(x), which the gradient rule
// passes (activations_cpu.cc reads the slope from the output).
struct ReluSlope {
  ONNX_AMP_HD float operator()(float v) const { return v > 0.0f ? 1.0f : 0.0f; }
};
// sigmoid' = y * (1 - y)
struct SigmoidSlope {
  ONNX_AMP_HD float operator()(float y) const { return y * (1.0f - y); }
};
// tanh' = 1 - y^2
struct TanhSlope {
  ONNX_AMP_HD float operator()(float y) const { return 1.0f - y * y; }
};
// Exact: gelu(x) = x * Phi(x), gelu' = Phi(x) + x * phi(x).
struct GeluSlope {
  ONNX_AMP_HD float operator()(float x) const {
    const float cdf = 0.5f * (1.0f + std::erf(x * static_cast<float>(0.70710678118654752440)));  // x / sqrt(2)
    const float pdf = std::exp(-0.5f * x * x) * static_cast<float>(0.39894228040143267794);     // 1 / sqrt(2 pi)
    return cdf + x * pdf;
  }
};
// tanh form: gelu(x) = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3),
// gelu' = (1 + t)/2 + x/2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2).
struct GeluTanhSlope {
  ONNX_AMP_HD float operator()(float x) const {
    const float k = static_cast<float>(0.79788456080286535588);  // sqrt(2 / pi)
    const float t = std::tanh(k * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
  }
};

// ---- binary arithmetic ----
struct AddOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a + b); } };
struct SubOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a - b); } };
struct MulOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a * b); } };
struct DivOp {
  // Integer division truncates; an integer division by zero gives 0 instead of a trap.
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return b == C(0) ? C(0) : static_cast<C>(a / b);
    else return a / b;
  }
};
struct PowOp {
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return std::pow(a, b); }
};
// fmod = 1: C fmod (sign of the dividend); fmod = 0: the sign of the divisor (Python).
struct ModOp {
  bool fmod = false;
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const {
    C r;
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      r = static_cast<C>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if (!fmod && r != C(0) && ((r < C(0)) != (b < C(0)))) r = static_cast<C>(r + b);
    return r;
  }
};
struct BitShiftOp {
  bool left = true;
  // Shifting by the bit width or more gives 0 (no undefined behaviour).
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const {
    if (b >= static_cast<C>(sizeof(C) * 8)) return C(0);
    return left ? static_cast<C>(a << b) : static_cast<C>(a >> b);
  }
};
struct BitwiseAndOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a & b); } };
struct BitwiseOrOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a | b); } };
struct BitwiseXorOp { template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return static_cast<C>(a ^ b); } };
struct BitwiseNotOp { template <typename C> ONNX_AMP_HD C operator()(C a) const { return static_cast<C>(~a); } };
struct AndOp { ONNX_AMP_HD bool operator()(bool a, bool b) const { return a && b; } };
struct OrOp { ONNX_AMP_HD bool operator()(bool a, bool b) const { return a || b; } };
struct XorOp { ONNX_AMP_HD bool operator()(bool a, bool b) const { return a != b; } };
struct NotOp { ONNX_AMP_HD bool operator()(bool a) const { return !a; } };

// ---- comparisons ----
struct EqualOp { template <typename C> ONNX_AMP_HD bool operator()(C a, C b) const { return a == b; } };
struct LessOp { template <typename C> ONNX_AMP_HD bool operator()(C a, C b) const { return a < b; } };
struct LessOrEqualOp { template <typename C> ONNX_AMP_HD bool operator()(C a, C b) const { return a <= b; } };
struct GreaterOp { template <typename C> ONNX_AMP_HD bool operator()(C a, C b) const { return a > b; } };
struct GreaterOrEqualOp { template <typename C> ONNX_AMP_HD bool operator()(C a, C b) const { return a >= b; } };

// ---- variadic folds ----
// Max and Min propagate NaN from either side (numpy.maximum / numpy.minimum).
struct MaxOp {
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return a != a ? a : (b != b || b > a ? b : a); }
};
struct MinOp {
  template <typename C> ONNX_AMP_HD C operator()(C a, C b) const { return a != a ? a : (b != b || b < a ? b : a); }
};

// ---- clip ----
struct ClipOp {
  template <typename C> ONNX_AMP_HD C operator()(C x, C lo, C hi) const {
    const C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

}  // namespace onnx_amp
