#include "ops/elementwise/elementwise_cuda.h"

#include "ops/common/elementwise_math.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"
#include "runtime/cuda/launch.h"

namespace onnx_amp {
namespace {

template <typename T, typename Out, typename Op>
__global__ void UnaryKernel(const T* x, Out* y, int64_t count, Op op) {
  using C = CudaCompute<T>;
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) { StoreAs(y, i, op(LoadAs<C>(x, i))); }
}

template <typename T, typename Out, typename Op>
Status LaunchUnaryOp(const void* x, void* y, int64_t count, const CudaLaunchEnv& env, Op op) {
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  UnaryKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const T*>(x), static_cast<Out*>(y),
                                                                  count, op);
  return CudaLaunchStatus("element-wise kernel");
}

// Clip as a unary op with its bounds fixed.
struct BoundedClipOp {
  float lower, upper;
  template <typename C> __device__ C operator()(C x) const {
    return ClipOp{}(x, static_cast<C>(lower), static_cast<C>(upper));
  }
};

template <typename T>
Status LaunchFloatUnary(CudaUnary op, const CudaUnaryParams& p, const void* x, void* y, int64_t count,
                        const CudaLaunchEnv& env) {
  switch (op) {
    case CudaUnary::kAbs: return LaunchUnaryOp<T, T>(x, y, count, env, AbsOp{});
    case CudaUnary::kNeg: return LaunchUnaryOp<T, T>(x, y, count, env, NegOp{});
    case CudaUnary::kFloor: return LaunchUnaryOp<T, T>(x, y, count, env, FloorOp{});
    case CudaUnary::kCeil: return LaunchUnaryOp<T, T>(x, y, count, env, CeilOp{});
    case CudaUnary::kRound: return LaunchUnaryOp<T, T>(x, y, count, env, RoundOp{});
    case CudaUnary::kReciprocal: return LaunchUnaryOp<T, T>(x, y, count, env, ReciprocalOp{});
    case CudaUnary::kSqrt: return LaunchUnaryOp<T, T>(x, y, count, env, SqrtOp{});
    case CudaUnary::kExp: return LaunchUnaryOp<T, T>(x, y, count, env, ExpOp{});
    case CudaUnary::kLog: return LaunchUnaryOp<T, T>(x, y, count, env, LogOp{});
    case CudaUnary::kSin: return LaunchUnaryOp<T, T>(x, y, count, env, SinOp{});
    case CudaUnary::kCos: return LaunchUnaryOp<T, T>(x, y, count, env, CosOp{});
    case CudaUnary::kTan: return LaunchUnaryOp<T, T>(x, y, count, env, TanOp{});
    case CudaUnary::kErf: return LaunchUnaryOp<T, T>(x, y, count, env, ErfOp{});
    case CudaUnary::kSign: return LaunchUnaryOp<T, T>(x, y, count, env, SignOp{});
    case CudaUnary::kRelu: return LaunchUnaryOp<T, T>(x, y, count, env, ReluOp{});
    case CudaUnary::kLeakyRelu: return LaunchUnaryOp<T, T>(x, y, count, env, LeakyReluOp{p.alpha});
    case CudaUnary::kElu: return LaunchUnaryOp<T, T>(x, y, count, env, EluOp{p.alpha});
    case CudaUnary::kSelu: return LaunchUnaryOp<T, T>(x, y, count, env, SeluOp{p.alpha, p.gamma});
    case CudaUnary::kCelu: return LaunchUnaryOp<T, T>(x, y, count, env, CeluOp{p.alpha});
    case CudaUnary::kSigmoid: return LaunchUnaryOp<T, T>(x, y, count, env, SigmoidOp{});
    case CudaUnary::kHardSigmoid: return LaunchUnaryOp<T, T>(x, y, count, env, HardSigmoidOp{p.alpha, p.beta});
    case CudaUnary::kHardSwish: return LaunchUnaryOp<T, T>(x, y, count, env, HardSwishOp{});
    case CudaUnary::kSoftplus: return LaunchUnaryOp<T, T>(x, y, count, env, SoftplusOp{});
    case CudaUnary::kSoftsign: return LaunchUnaryOp<T, T>(x, y, count, env, SoftsignOp{});
    case CudaUnary::kTanh: return LaunchUnaryOp<T, T>(x, y, count, env, TanhOp{});
    case CudaUnary::kThresholdedRelu: return LaunchUnaryOp<T, T>(x, y, count, env, ThresholdedReluOp{p.alpha});
    case CudaUnary::kGelu: return LaunchUnaryOp<T, T>(x, y, count, env, GeluOp{false});
    case CudaUnary::kGeluTanh: return LaunchUnaryOp<T, T>(x, y, count, env, GeluOp{true});
    case CudaUnary::kMish: return LaunchUnaryOp<T, T>(x, y, count, env, MishOp{});
    case CudaUnary::kClip: return LaunchUnaryOp<T, T>(x, y, count, env, BoundedClipOp{p.alpha, p.beta});
    case CudaUnary::kIsNaN: return LaunchUnaryOp<T, bool>(x, y, count, env, IsNaNOp{});
    case CudaUnary::kIsInf: return LaunchUnaryOp<T, bool>(x, y, count, env, IsInfOp{p.flag_a, p.flag_b});
    case CudaUnary::kNot: break;
  }
  return InternalError("unary CUDA op on a float tensor it does not take");
}

// The element offsets of output element `index` in operands a, b and c.
__device__ __forceinline__ void BroadcastOffsets(const CudaBroadcast& plan, int64_t index, int64_t offsets[3]) {
  offsets[0] = offsets[1] = offsets[2] = 0;
  for (int d = plan.rank - 1; d >= 0; --d) {
    const int64_t position = index % plan.dims[d];
    index /= plan.dims[d];
    offsets[0] += position * plan.strides[0][d];
    offsets[1] += position * plan.strides[1][d];
    offsets[2] += position * plan.strides[2][d];
  }
}

template <typename T, typename Out, typename Op>
__global__ void BinaryKernel(const T* a, const T* b, Out* out, CudaBroadcast plan, Op op) {
  using C = CudaCompute<T>;
  if (plan.contiguous) {
    ONNX_AMP_GRID_STRIDE_LOOP(i, plan.total) { StoreAs(out, i, op(LoadAs<C>(a, i), LoadAs<C>(b, i))); }
    return;
  }
  ONNX_AMP_GRID_STRIDE_LOOP(i, plan.total) {
    int64_t offsets[3];
    BroadcastOffsets(plan, i, offsets);
    StoreAs(out, i, op(LoadAs<C>(a, offsets[0]), LoadAs<C>(b, offsets[1])));
  }
}

template <typename T, typename Out, typename Op>
Status LaunchBinaryOp(const CudaBroadcast& plan, const void* a, const void* b, void* out, const CudaLaunchEnv& env,
                      Op op) {
  const LaunchShape launch = ElementwiseLaunch(plan.total, env.multiprocessors);
  BinaryKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<Out*>(out), plan, op);
  return CudaLaunchStatus("broadcast kernel");
}

// dX = dY * slope(V), in float32.
template <typename Slope>
struct GradientOp {
  Slope slope;
  __device__ float operator()(float dy, float v) const { return dy * slope(v); }
};

template <typename T>
Status LaunchNumericBinary(CudaBinary op, const CudaBroadcast& plan, const void* a, const void* b, void* out,
                           const CudaLaunchEnv& env) {
  switch (op) {
    case CudaBinary::kAdd: return LaunchBinaryOp<T, T>(plan, a, b, out, env, AddOp{});
    case CudaBinary::kSub: return LaunchBinaryOp<T, T>(plan, a, b, out, env, SubOp{});
    case CudaBinary::kMul: return LaunchBinaryOp<T, T>(plan, a, b, out, env, MulOp{});
    case CudaBinary::kDiv: return LaunchBinaryOp<T, T>(plan, a, b, out, env, DivOp{});
    case CudaBinary::kMax: return LaunchBinaryOp<T, T>(plan, a, b, out, env, MaxOp{});
    case CudaBinary::kMin: return LaunchBinaryOp<T, T>(plan, a, b, out, env, MinOp{});
    case CudaBinary::kEqual: return LaunchBinaryOp<T, bool>(plan, a, b, out, env, EqualOp{});
    case CudaBinary::kLess: return LaunchBinaryOp<T, bool>(plan, a, b, out, env, LessOp{});
    case CudaBinary::kLessOrEqual: return LaunchBinaryOp<T, bool>(plan, a, b, out, env, LessOrEqualOp{});
    case CudaBinary::kGreater: return LaunchBinaryOp<T, bool>(plan, a, b, out, env, GreaterOp{});
    case CudaBinary::kGreaterOrEqual: return LaunchBinaryOp<T, bool>(plan, a, b, out, env, GreaterOrEqualOp{});
    case CudaBinary::kPow:
    case CudaBinary::kPRelu:
    case CudaBinary::kReluGrad:
    case CudaBinary::kSigmoidGrad:
    case CudaBinary::kTanhGrad:
    case CudaBinary::kGeluGrad:
    case CudaBinary::kGeluTanhGrad:
      if constexpr (std::is_floating_point_v<CudaCompute<T>>) {
        switch (op) {
          case CudaBinary::kPow: return LaunchBinaryOp<T, T>(plan, a, b, out, env, PowOp{});
          case CudaBinary::kPRelu: return LaunchBinaryOp<T, T>(plan, a, b, out, env, PReluOp{});
          case CudaBinary::kReluGrad: return LaunchBinaryOp<T, T>(plan, a, b, out, env, GradientOp<ReluSlope>{});
          case CudaBinary::kSigmoidGrad:
            return LaunchBinaryOp<T, T>(plan, a, b, out, env, GradientOp<SigmoidSlope>{});
          case CudaBinary::kTanhGrad: return LaunchBinaryOp<T, T>(plan, a, b, out, env, GradientOp<TanhSlope>{});
          case CudaBinary::kGeluGrad: return LaunchBinaryOp<T, T>(plan, a, b, out, env, GradientOp<GeluSlope>{});
          case CudaBinary::kGeluTanhGrad:
            return LaunchBinaryOp<T, T>(plan, a, b, out, env, GradientOp<GeluTanhSlope>{});
          default: break;
        }
      }
      break;
    case CudaBinary::kAnd:
    case CudaBinary::kOr:
    case CudaBinary::kXor:
      break;
  }
  return InternalError("binary CUDA op on a tensor type it does not take");
}

template <typename T>
__global__ void WhereKernel(const bool* cond, const T* x, const T* y, T* out, CudaBroadcast plan) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, plan.total) {
    int64_t offsets[3];
    BroadcastOffsets(plan, i, offsets);
    out[i] = cond[offsets[0]] ? x[offsets[1]] : y[offsets[2]];
  }
}

template <typename T>
__global__ void DivideKernel(T* data, int64_t count, float divisor) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) { StoreFloat(data, i, LoadFloat(data, i) / divisor); }
}

}  // namespace

Status LaunchCudaUnary(CudaUnary op, const CudaUnaryParams& params, DType dtype, const void* x, void* y,
                       int64_t count, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  if (op == CudaUnary::kNot) {
    if (dtype != DType::kBool) return CudaUnsupportedDType(dtype, "Not");
    return LaunchUnaryOp<bool, bool>(x, y, count, env, NotOp{});
  }
  return DispatchCudaFloat(dtype, "unary op", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return LaunchFloatUnary<T>(op, params, x, y, count, env);
  });
}

Status LaunchCudaBinary(CudaBinary op, DType dtype, const CudaBroadcast& plan, const void* a, const void* b,
                        void* out, const CudaLaunchEnv& env) {
  if (plan.total == 0) return Status::Ok();
  if (op == CudaBinary::kAnd || op == CudaBinary::kOr || op == CudaBinary::kXor) {
    if (dtype != DType::kBool) return CudaUnsupportedDType(dtype, "logical op");
    if (op == CudaBinary::kAnd) return LaunchBinaryOp<bool, bool>(plan, a, b, out, env, AndOp{});
    if (op == CudaBinary::kOr) return LaunchBinaryOp<bool, bool>(plan, a, b, out, env, OrOp{});
    return LaunchBinaryOp<bool, bool>(plan, a, b, out, env, XorOp{});
  }
  return DispatchCudaNumeric(dtype, "binary op", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return LaunchNumericBinary<T>(op, plan, a, b, out, env);
  });
}

Status LaunchCudaWhere(DType dtype, const CudaBroadcast& plan, const bool* cond, const void* x, const void* y,
                       void* out, const CudaLaunchEnv& env) {
  if (plan.total == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(plan.total, env.multiprocessors);
  return DispatchCudaNumeric(dtype, "Where", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    WhereKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(cond, static_cast<const T*>(x),
                                                                    static_cast<const T*>(y), static_cast<T*>(out), plan);
    return CudaLaunchStatus("Where");
  });
}

Status LaunchCudaDivide(DType dtype, void* data, int64_t count, float divisor, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  return DispatchCudaFloat(dtype, "divide", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    DivideKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<T*>(data), count, divisor);
    return CudaLaunchStatus("divide");
  });
}

}  // namespace onnx_amp
