// The activation ops and their fused gradients. The table at the end is the family's
// list of activations (activations.h): each op's kernel and, where it has one, its fused
// gradient op.
#include <algorithm>
#include <concepts>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/common/column_sums.h"
#include "ops/common/cpu_clones.h"
#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_lanes.h"
#include "ops/common/relu_bits.h"
#include "ops/elementwise/activations.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/elementwise/lane_unary.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

template <typename Op>
Status FloatUnary(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, Op{});
}

// Elements per parallel chunk of the element-wise passes here.
constexpr int64_t kChunk = 1 << 16;

// float32 and float16/bfloat16 through relu_bits.h's loops, built for the CPU's widest
// vectors; float16/bfloat16 on their bits, the same bits as ReluOp on the widened values
// without the two conversions.
Status Relu(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  const DType dtype = x->dtype();
  if (dtype != DType::kFloat32 && !IsLowPrecision(dtype)) {
    return RunUnary<kMaskFloats | kMaskSigned>(context, ReluOp{});
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, dtype, x->shape()));
  context.threads().ParallelFor(x->num_elements(), kChunk, [&](int64_t begin, int64_t end) {
    if (dtype == DType::kFloat32) return ReluFloat32(x->data<float>() + begin, y->data<float>() + begin, end - begin);
    ReluOnLowPrecisionBits(dtype, static_cast<const uint16_t*>(x->raw_data()) + begin,
                           static_cast<uint16_t*>(y->raw_data()) + begin, end - begin);
  });
  return Status::Ok();
}

Status LeakyRelu(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, LeakyReluOp{context.attr_float("alpha", 0.01f)});
}

// Before opset 7 a 1-D slope of length C applies per channel (axis 1), not by NumPy
// broadcasting; it is viewed as [C, 1, ..., 1].
Status PRelu(KernelContext& context) {
  constexpr uint32_t kMask = kMaskFloats | kMaskInt32 | kMaskInt64 | kMaskUInt32 | kMaskUInt64;
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* slope, RequiredInput(context, 1));
  if (context.opset() < 7 && x->rank() >= 2 && slope->rank() == 1 && slope->dim(0) == x->dim(1) &&
      slope->dim(0) != 1) {
    Shape channel_shape(x->rank() - 1, 1);
    channel_shape[0] = slope->dim(0);
    const Tensor per_channel = slope->Reshaped(channel_shape);
    return RunBinaryOn<kMask>(context, x, &per_channel, PReluOp{});
  }
  return RunBinaryOn<kMask>(context, x, slope, PReluOp{});
}

Status Elu(KernelContext& context) { return RunUnary<kMaskFloats>(context, EluOp{context.attr_float("alpha", 1.0f)}); }

Status Selu(KernelContext& context) {
  SeluOp op;
  op.alpha = context.attr_float("alpha", op.alpha);
  op.gamma = context.attr_float("gamma", op.gamma);
  return RunUnary<kMaskFloats>(context, op);
}

Status Celu(KernelContext& context) { return RunUnary<kMaskFloats>(context, CeluOp{context.attr_float("alpha", 1.0f)}); }

Status HardSigmoid(KernelContext& context) {
  HardSigmoidOp op;
  op.alpha = context.attr_float("alpha", op.alpha);
  op.beta = context.attr_float("beta", op.beta);
  return RunUnary<kMaskFloats>(context, op);
}

Status ThresholdedRelu(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, ThresholdedReluOp{context.attr_float("alpha", 1.0f)});
}

Status Gelu(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return context.Error(ErrorCode::kInvalidModel, "approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  return approximate == "tanh" ? LaneUnaryKernel<LaneFunction::kGeluTanh>(context)
                               : LaneUnaryKernel<LaneFunction::kGelu>(context);
}

Status Shrink(KernelContext& context) {
  ShrinkOp op;
  op.bias = context.attr_float("bias", op.bias);
  op.lambd = context.attr_float("lambd", op.lambd);
  return RunUnary<kMaskNumeric>(context, op);
}

// --- fused gradients: dX = dY * slope(V), V the forward value of input 1 (X or Y).
// float32, float16 and bfloat16 tensors are read as float32, and each element of dX is
// rounded once to the dtype of dY.

// Elements per block: float16/bfloat16 ones are converted into float32 on the stack, small
// enough to stay in L1 (float32 ones are read and written in place).
constexpr int64_t kGradBlock = 2048;

// out[i] = g[i] * slope(value[i]) over one block. Two loops, so that both vectorise: in
// one, a slope such as Relu's (a 0 or a 1) becomes a multiply taken on one branch only,
// which the compiler may not make unconditional (it could trap). `out` may be g itself
// (never a shifted block), so no element depends on another.
// A slope with a 16-lane form (ops/common/float_lanes.h) takes it instead.
template <typename Slope>
concept LaneSlope = requires(const Slope& slope, Lanes x) {
  { slope(x) } -> std::same_as<Lanes>;
};

template <typename Slope>
ONNX_AMP_CPU_CLONES void ApplySlope(const Slope& slope, const float* g, const float* __restrict value,
                                    float* __restrict slopes, float* out, int64_t n) {
  if constexpr (LaneSlope<Slope>) {
    MapLanes(value, n, out, [&](Lanes v, int64_t i) ONNX_AMP_LANES_LAMBDA { return LoadPadded(g, i, n) * slope(v); });
  } else {
    for (int64_t i = 0; i < n; ++i) slopes[i] = slope(value[i]);
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) out[i] = g[i] * slopes[i];
  }
}

// GeluSlope and GeluTanhSlope (ops/common/elementwise_math.h), the same formulas on
// lanes: erf, exp and tanh are library calls per element in the scalar forms. Always
// inlined, as every function passing lanes is (ops/common/float_lanes.h).
struct GeluLaneSlope {
  ONNX_AMP_LANES_INLINE Lanes operator()(Lanes x) const {
    const Lanes cdf = 0.5f * (1.0f + ErfLanes(x * static_cast<float>(0.70710678118654752440)));
    const Lanes pdf = ExpNonPositiveLanes(-0.5f * x * x) * static_cast<float>(0.39894228040143267794);
    return cdf + x * pdf;
  }
};
struct GeluTanhLaneSlope {
  ONNX_AMP_LANES_INLINE Lanes operator()(Lanes x) const {
    const float k = static_cast<float>(0.79788456080286535588);  // sqrt(2 / pi)
    const Lanes t = TanhLanes(k * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
  }
};

// dX[i] = dY[i] * slope(V[i]) over elements [begin, end). Relu's slope on float16/bfloat16
// dY and Y of one dtype runs on their bits (relu_bits.h), the same bits without the
// conversions. Each element is independent, so no split of the range changes a bit.
template <typename Slope>
void GradRange(const Slope& slope, const Tensor& dy, const Tensor& v, Tensor& dx, int64_t begin, int64_t end) {
  if constexpr (std::is_same_v<Slope, ReluSlope>) {
    if (IsLowPrecision(dy.dtype()) && v.dtype() == dy.dtype()) {
      ReluGradOnLowPrecisionBits(dy.dtype(), static_cast<const uint16_t*>(dy.raw_data()) + begin,
                                 static_cast<const uint16_t*>(v.raw_data()) + begin,
                                 static_cast<uint16_t*>(dx.raw_data()) + begin, end - begin);
      return;
    }
  }
  float grad[kGradBlock], values[kGradBlock], slopes[kGradBlock];
  for (int64_t block = begin; block < end; block += kGradBlock) {
    const int64_t n = std::min(kGradBlock, end - block);
    const float* g = Float32BlockOf(dy, block, n, grad);
    const float* value = Float32BlockOf(v, block, n, values);
    float* out = dx.dtype() == DType::kFloat32 ? dx.data<float>() + block : grad;
    ApplySlope(slope, g, value, slopes, out, n);
    if (out == grad) StoreFloat32Block(grad, block, n, dx);
  }
}

// Columns per parallel chunk of a summed gradient: the chunk's float32 sums stay in L1.
constexpr int64_t kSumColumns = 1024;

// dX and, as output 1, dX summed over its first `axes` axes, kept as 1s: a bias
// gradient's ReduceSum folded in (runtime/executor/plan_fusion.h). Threads split the
// columns (the elements past those axes); each sums its columns down the rows in order
// in float32 and rounds once, ReduceSum's order and bits (column_sums.h), reading each
// row of dX while it is still in L1 where each thread gets columns of its own.
template <typename Slope>
Status GradWithLeadingSums(KernelContext& context, const Slope& slope, const Tensor& dy, const Tensor& v, Tensor& dx,
                           int axes) {
  if (axes > dy.rank()) {
    return context.Error(ErrorCode::kInvalidModel, "the ReduceSum folded in sums " + std::to_string(axes) +
                                                       " leading axes of dX " + ShapeToString(dy.shape()));
  }
  Shape sums_shape = dy.shape();
  std::fill(sums_shape.begin(), sums_shape.begin() + axes, 1);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * sums, context.AllocateOutput(1, dy.dtype(), sums_shape));
  const int64_t columns = sums->num_elements();
  const int64_t rows = columns == 0 ? 0 : dy.num_elements() / columns;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor totals, context.ScratchFloat32(columns));
  float* acc = totals.data<float>();
  // Too few columns to give every thread a chunk: dX over all the threads first, then the
  // sums from it (the two steps' passes, the same bits).
  const bool one_pass = columns >= kSumColumns * context.threads().num_threads();
  if (!one_pass) {
    context.threads().ParallelFor(dy.num_elements(), kChunk,
                                  [&](int64_t begin, int64_t end) { GradRange(slope, dy, v, dx, begin, end); });
  }
  return DispatchDType<kMaskFloat32 | kMaskFloat16 | kMaskBFloat16>(context, dx.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    context.threads().ParallelFor(columns, kSumColumns, [&](int64_t c0, int64_t c1) {
      std::fill(acc + c0, acc + c1, 0.0f);
      if (!one_pass) {
        for (int64_t row = 0; row < rows; ++row) AddRowToSums(dx.data<T>() + row * columns + c0, acc + c0, c1 - c0);
        return;
      }
      if constexpr (std::is_same_v<Slope, ReluSlope>) {
        if (v.dtype() == dy.dtype() && ReluGradRowsWithSumsOnAvx512()) {
          if constexpr (std::is_same_v<T, float>) {
            ReluGradRowsWithSumsAvx512(dy.data<float>() + c0, v.data<float>() + c0, dx.data<float>() + c0, rows,
                                       c1 - c0, columns, acc + c0);
          } else {
            const auto bits = [&](const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()) + c0; };
            ReluGradRowsWithSumsAvx512(dy.dtype(), bits(dy), bits(v), static_cast<uint16_t*>(dx.raw_data()) + c0,
                                       rows, c1 - c0, columns, acc + c0);
          }
          return;
        }
      }
      for (int64_t row = 0; row < rows; ++row) {
        GradRange(slope, dy, v, dx, row * columns + c0, row * columns + c1);
        AddRowToSums(dx.data<T>() + row * columns + c0, acc + c0, c1 - c0);
      }
    });
    StoreAs(acc, sums->data<T>(), columns);
    return Status::Ok();
  });
}

// dX block by block over the pool's threads, with the folded sums where the plan asks.
template <typename Slope>
Status PointwiseGradWith(KernelContext& context, const Slope& slope) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* v, FloatInput(context, 1));
  if (dy->shape() != v->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "dY " + ShapeToString(dy->shape()) + " and the forward value " +
                                                       ShapeToString(v->shape()) + " differ in shape");
  }
  const int summed_axes = context.summed_leading_axes();
  if (context.num_outputs() < 1 || !(context.output_used(0) || (summed_axes > 0 && context.output_used(1)))) {
    return Status::Ok();
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy->dtype(), dy->shape()));
  if (summed_axes > 0) return GradWithLeadingSums(context, slope, *dy, *v, *dx, summed_axes);
  context.threads().ParallelFor(dy->num_elements(), kChunk,
                                [&](int64_t begin, int64_t end) { GradRange(slope, *dy, *v, *dx, begin, end); });
  return Status::Ok();
}

template <typename Slope>
Status PointwiseGrad(KernelContext& context) {
  return PointwiseGradWith(context, Slope{});
}

Status GeluGrad(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return context.Error(ErrorCode::kInvalidModel, "unknown approximate '" + approximate + "'");
  }
  if (approximate == "tanh") return PointwiseGradWith(context, GeluTanhLaneSlope{});
  return PointwiseGradWith(context, GeluLaneSlope{});
}

// Slopes and formulas: ops/common/elementwise_math.h.
constexpr Activation kActivations[] = {
    // ReluGrad reads Y (Y > 0 exactly where X > 0; Y = max(X, 0) keeps NaN), so X dies at
    // the Relu and a Gemm, MatMul or Conv before it can fold the Relu in.
    {"Relu", Relu, "ReluGrad", PointwiseGrad<ReluSlope>, SlopeOf::kOutput},
    {"LeakyRelu", LeakyRelu},
    {"PRelu", PRelu},
    {"Elu", Elu},
    {"Selu", Selu},
    {"Celu", Celu},
    {"Sigmoid", LaneUnaryKernel<LaneFunction::kSigmoid>, "SigmoidGrad", PointwiseGrad<SigmoidSlope>, SlopeOf::kOutput},
    {"HardSigmoid", HardSigmoid},
    {"HardSwish", FloatUnary<HardSwishOp>},
    {"Softplus", FloatUnary<SoftplusOp>},
    {"Softsign", FloatUnary<SoftsignOp>},
    {"Tanh", LaneUnaryKernel<LaneFunction::kTanh>, "TanhGrad", PointwiseGrad<TanhSlope>, SlopeOf::kOutput},
    {"ThresholdedRelu", ThresholdedRelu},
    {"Gelu", Gelu, "GeluGrad", GeluGrad, SlopeOf::kInput, {"approximate"}},
    {"Mish", FloatUnary<MishOp>},
    {"Shrink", Shrink},
};

}  // namespace

std::span<const Activation> Activations() { return kActivations; }

const Activation* FindActivation(std::string_view op) {
  for (const Activation& activation : kActivations) {
    if (activation.op == op) return &activation;
  }
  return nullptr;
}

void RegisterActivationCpuKernels(KernelRegistry& registry) {
  for (const Activation& activation : kActivations) {
    // may_inplace: element i of the output reads only element i of a same-shaped input,
    // so the output may reuse that input's buffer.
    KernelDef forward{"", activation.op, DeviceKind::kCpu, activation.forward, true};
    forward.channels_last = kElementWiseChannelsLast;
    registry.Register(forward);
    if (!activation.gradient_op.empty()) {
      KernelDef gradient{kOnnxAmpDomain, activation.gradient_op, DeviceKind::kCpu, activation.gradient};
      gradient.channels_last = kElementWiseChannelsLast;
      gradient.sums_leading_axes = true;
      registry.Register(gradient);
    }
  }
}

}  // namespace onnx_amp
