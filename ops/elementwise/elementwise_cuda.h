// Launchers of the element-wise CUDA kernels (elementwise_cuda.cu): unary math and
// activations, broadcasting binary ops and comparisons, the activation gradients and
// Where (Cast: ops/common/cuda_cast.h). They take device pointers and queue on env.stream; the per-element
// math is the CPU's (ops/common/elementwise_math.h), computed
// in float32 for float16/bfloat16/float32 and rounded once. The KernelContext side is
// elementwise_cuda.cc.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

enum class CudaUnary {
  kAbs, kNeg, kFloor, kCeil, kRound, kReciprocal, kSqrt, kExp, kLog, kSin, kCos, kTan, kErf, kSign,
  kRelu, kLeakyRelu, kElu, kSelu, kCelu, kSigmoid, kHardSigmoid, kHardSwish, kSoftplus, kSoftsign, kTanh,
  kThresholdedRelu, kGelu, kGeluTanh, kMish, kClip,
  kIsNaN, kIsInf, kNot,  // bool outputs (Not: bool input)
};

// Attributes: alpha/beta/gamma as the op names them; Clip's bounds are alpha (lower)
// and beta (upper); IsInf's detect_negative/detect_positive are flag_a/flag_b.
struct CudaUnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  bool flag_a = true;
  bool flag_b = true;
};

// `dtype` is x's (float32/float16/bfloat16; bool for Not); y has x's dtype, or bool
// for IsNaN, IsInf and Not.
Status LaunchCudaUnary(CudaUnary op, const CudaUnaryParams& params, DType dtype, const void* x, void* y,
                       int64_t count, const CudaLaunchEnv& env);

enum class CudaBinary {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu,
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual,  // bool outputs
  kAnd, kOr, kXor,                                          // bool in, bool out
  kReluGrad, kSigmoidGrad, kTanhGrad, kGeluGrad, kGeluTanhGrad,  // (dY, V) -> dX
};

// Broadcast iteration for the kernels: the merged dims of BroadcastPlan (ops/elementwise/
// broadcast.h) and each operand's element stride along them.
inline constexpr int kCudaMaxBroadcastRank = 8;
struct CudaBroadcast {
  int rank = 1;
  int64_t total = 0;
  int64_t dims[kCudaMaxBroadcastRank] = {};
  int64_t strides[3][kCudaMaxBroadcastRank] = {};
  bool contiguous = false;  // every operand has the output's shape
};

// `dtype` is the operands' (float32/float16/bfloat16/int32/int64; bool for And/Or/Xor);
// the output has it, or bool for comparisons.
Status LaunchCudaBinary(CudaBinary op, DType dtype, const CudaBroadcast& plan, const void* a, const void* b,
                        void* out, const CudaLaunchEnv& env);

// out = cond ? x : y with broadcasting (operands: cond, x, y); `dtype` is x's.
Status LaunchCudaWhere(DType dtype, const CudaBroadcast& plan, const bool* cond, const void* x, const void* y,
                       void* out, const CudaLaunchEnv& env);

// data[i] /= divisor in place (Mean), float dtypes.
Status LaunchCudaDivide(DType dtype, void* data, int64_t count, float divisor, const CudaLaunchEnv& env);

}  // namespace onnx_amp
