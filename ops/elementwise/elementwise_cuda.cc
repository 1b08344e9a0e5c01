// The KernelContext side of the element-wise CUDA kernels (elementwise_cuda.cu): reads
// attributes and scalar bounds, checks dtypes and shapes as the CPU kernels do,
// allocates the output on the device, and registers the kernels.
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "ops/cuda_kernels.h"
#include "ops/common/cuda_cast.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_cuda.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"
#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

Expected<CudaBroadcast> MakeCudaBroadcast(const std::vector<Shape>& shapes) {
  ONNX_AMP_ASSIGN_OR_RETURN(const BroadcastPlan plan, MakeBroadcastPlan(shapes));
  if (plan.dims.size() > static_cast<size_t>(kCudaMaxBroadcastRank)) {
    return Unsupported("broadcasting over more than " + std::to_string(kCudaMaxBroadcastRank) +
                       " merged dimensions on CUDA");
  }
  CudaBroadcast cuda;
  cuda.rank = static_cast<int>(plan.dims.size());
  cuda.total = plan.total;
  cuda.contiguous = true;
  for (const Shape& shape : shapes) cuda.contiguous &= shape == plan.output_shape;
  for (int d = 0; d < cuda.rank; ++d) {
    cuda.dims[d] = plan.dims[d];
    for (size_t k = 0; k < shapes.size(); ++k) cuda.strides[k][d] = plan.strides[d][k];
  }
  return cuda;
}

Expected<CudaBroadcast> PlanCudaBroadcast(const KernelContext& context, std::span<const Shape> shapes) {
  Expected<CudaBroadcast> plan = MakeCudaBroadcast(std::vector<Shape>(shapes.begin(), shapes.end()));
  if (!plan.ok()) return context.Error(plan.status().code(), plan.status().message());
  return plan;
}

template <CudaUnary kOp>
Status Unary(KernelContext& context, const CudaUnaryParams& params = {}) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  const bool predicate = kOp == CudaUnary::kIsNaN || kOp == CudaUnary::kIsInf || kOp == CudaUnary::kNot;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y,
                            context.AllocateOutput(0, predicate ? DType::kBool : x->dtype(), x->shape()));
  return LaunchCudaUnary(kOp, params, x->dtype(), x->raw_data(), y->raw_data(), x->num_elements(),
                         LaunchEnvOf(context));
}

template <CudaUnary kOp>
Status PlainUnary(KernelContext& context) {
  return Unary<kOp>(context);
}

Status LeakyRelu(KernelContext& context) {
  return Unary<CudaUnary::kLeakyRelu>(context, {.alpha = context.attr_float("alpha", 0.01f)});
}
Status Elu(KernelContext& context) { return Unary<CudaUnary::kElu>(context, {.alpha = context.attr_float("alpha", 1.0f)}); }
Status Selu(KernelContext& context) {
  return Unary<CudaUnary::kSelu>(context, {.alpha = context.attr_float("alpha", 1.67326319217681884765625f),
                                           .gamma = context.attr_float("gamma", 1.05070102214813232421875f)});
}
Status Celu(KernelContext& context) { return Unary<CudaUnary::kCelu>(context, {.alpha = context.attr_float("alpha", 1.0f)}); }
Status HardSigmoid(KernelContext& context) {
  return Unary<CudaUnary::kHardSigmoid>(
      context, {.alpha = context.attr_float("alpha", 0.2f), .beta = context.attr_float("beta", 0.5f)});
}
Status ThresholdedRelu(KernelContext& context) {
  return Unary<CudaUnary::kThresholdedRelu>(context, {.alpha = context.attr_float("alpha", 1.0f)});
}
Status Gelu(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate == "tanh") return Unary<CudaUnary::kGeluTanh>(context);
  if (approximate != "none") return context.Error(ErrorCode::kInvalidModel, "unknown approximate '" + approximate + "'");
  return Unary<CudaUnary::kGelu>(context);
}
Status IsInf(KernelContext& context) {
  return Unary<CudaUnary::kIsInf>(context, {.flag_a = context.attr_int("detect_negative", 1) != 0,
                                            .flag_b = context.attr_int("detect_positive", 1) != 0});
}

// A float32/float16/bfloat16 scalar on the host as float.
float HostFloat(const Tensor& scalar) {
  if (scalar.dtype() == DType::kFloat16) return scalar.data<Float16>()->ToFloat();
  if (scalar.dtype() == DType::kBFloat16) return scalar.data<BFloat16>()->ToFloat();
  return *scalar.data<float>();
}

// Clip's bounds: attributes before opset 11, optional scalar inputs (read on the host) from 11.
Status Clip(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  CudaUnaryParams params{.alpha = -std::numeric_limits<float>::infinity(),
                         .beta = std::numeric_limits<float>::infinity()};
  if (context.opset() < 11) {
    params.alpha = context.attr_float("min", params.alpha);
    params.beta = context.attr_float("max", params.beta);
  } else {
    for (int index : {1, 2}) {
      const Tensor* bound = context.input(index);
      if (bound == nullptr) continue;
      if (bound->dtype() != x->dtype()) return context.Error(ErrorCode::kInvalidModel, "bounds must have the input's dtype");
      if (bound->num_elements() != 1) return context.Error(ErrorCode::kInvalidModel, "bounds must be scalars");
      (index == 1 ? params.alpha : params.beta) = HostFloat(*bound);
    }
  }
  return Unary<CudaUnary::kClip>(context, params);
}

Status BinaryOn(KernelContext& context, CudaBinary op, const Tensor& a, const Tensor& b, DType out_dtype) {
  ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, a, b));
  const Shape shapes[] = {a.shape(), b.shape()};
  ONNX_AMP_ASSIGN_OR_RETURN(CudaBroadcast plan, PlanCudaBroadcast(context, shapes));
  ONNX_AMP_ASSIGN_OR_RETURN(const Shape output_shape, BroadcastShapes(shapes));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, out_dtype, output_shape));
  return LaunchCudaBinary(op, a.dtype(), plan, a.raw_data(), b.raw_data(), out->raw_data(), LaunchEnvOf(context));
}

template <CudaBinary kOp>
Status Binary(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* a, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* b, RequiredInput(context, 1));
  const bool compare = kOp == CudaBinary::kEqual || kOp == CudaBinary::kLess || kOp == CudaBinary::kLessOrEqual ||
                       kOp == CudaBinary::kGreater || kOp == CudaBinary::kGreaterOrEqual;
  return BinaryOn(context, kOp, *a, *b, compare ? DType::kBool : a->dtype());
}

// dX = dY * slope(V): the forward value V has dY's shape.
template <CudaBinary kOp>
Status ActivationGrad(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* v, RequiredInput(context, 1));
  if (dy->shape() != v->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "dY " + ShapeToString(dy->shape()) + " and the forward value " +
                                                       ShapeToString(v->shape()) + " differ in shape");
  }
  return BinaryOn(context, kOp, *dy, *v, dy->dtype());
}

Status GeluGrad(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate == "tanh") return ActivationGrad<CudaBinary::kGeluTanhGrad>(context);
  if (approximate != "none") return context.Error(ErrorCode::kInvalidModel, "unknown approximate '" + approximate + "'");
  return ActivationGrad<CudaBinary::kGeluGrad>(context);
}

// Max Min Sum Mean over any number of inputs. Two inputs fold in one launch; more fold
// in a float32 accumulator, rounded once at the end (as the CPU kernel).
Status Fold(KernelContext& context, CudaBinary op, bool mean) {
  std::vector<const Tensor*> inputs;
  std::vector<Shape> shapes;
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (const Tensor* input = context.input(i)) {
      if (!inputs.empty()) ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *inputs.front(), *input));
      inputs.push_back(input);
      shapes.push_back(input->shape());
    }
  }
  if (inputs.empty()) return context.Error(ErrorCode::kInvalidModel, "needs at least one input");
  ONNX_AMP_ASSIGN_OR_RETURN(const Shape output_shape, BroadcastShapes(shapes));
  const DType dtype = inputs.front()->dtype();
  const CudaLaunchEnv env = LaunchEnvOf(context);
  CudaDevice& device = CudaOf(context);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype, output_shape));
  if (inputs.size() == 1) {
    ONNX_AMP_RETURN_IF_ERROR(device.CopyOnDevice(out->raw_data(), inputs[0]->raw_data(), out->bytes()));
  } else if (inputs.size() == 2) {
    const Shape two[] = {inputs[0]->shape(), inputs[1]->shape()};
    ONNX_AMP_ASSIGN_OR_RETURN(CudaBroadcast plan, PlanCudaBroadcast(context, two));
    ONNX_AMP_RETURN_IF_ERROR(
        LaunchCudaBinary(op, dtype, plan, inputs[0]->raw_data(), inputs[1]->raw_data(), out->raw_data(), env));
  } else {
    const bool widen = dtype != DType::kFloat32;
    if (widen && dtype != DType::kFloat16 && dtype != DType::kBFloat16) return context.UnsupportedDType(dtype);
    std::vector<Tensor> wide;
    for (const Tensor* input : inputs) {
      if (!widen) {
        wide.push_back(*input);
        continue;
      }
      ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device.Allocate(input->num_elements() * 4));
      Tensor converted(DType::kFloat32, input->shape(), std::move(buffer));
      ONNX_AMP_RETURN_IF_ERROR(
          LaunchCudaCast(dtype, DType::kFloat32, input->raw_data(), converted.raw_data(), input->num_elements(), env));
      wide.push_back(std::move(converted));
    }
    // Two accumulators in turn: a step that broadcasts reads its left operand at other
    // positions than it writes.
    Tensor acc[2];
    for (Tensor& buffer : acc) {
      ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> storage, device.Allocate(NumElements(output_shape) * 4));
      buffer = Tensor(DType::kFloat32, output_shape, std::move(storage));
    }
    const void* left = wide[0].raw_data();
    Shape left_shape = wide[0].shape();
    for (size_t k = 1; k < wide.size(); ++k) {
      const Shape pair[] = {left_shape, wide[k].shape()};
      ONNX_AMP_ASSIGN_OR_RETURN(CudaBroadcast plan, PlanCudaBroadcast(context, pair));
      Tensor& target = acc[k % 2];
      ONNX_AMP_RETURN_IF_ERROR(
          LaunchCudaBinary(op, DType::kFloat32, plan, left, wide[k].raw_data(), target.raw_data(), env));
      ONNX_AMP_ASSIGN_OR_RETURN(left_shape, BroadcastShapes(pair));
      left = target.raw_data();
    }
    Tensor& result = acc[(wide.size() - 1) % 2];
    void* sum = result.raw_data();
    if (mean) {
      ONNX_AMP_RETURN_IF_ERROR(
          LaunchCudaDivide(DType::kFloat32, sum, result.num_elements(), static_cast<float>(inputs.size()), env));
    }
    return LaunchCudaCast(DType::kFloat32, dtype, sum, out->raw_data(), result.num_elements(), env);
  }
  if (mean) {
    return LaunchCudaDivide(dtype, out->raw_data(), out->num_elements(), static_cast<float>(inputs.size()), env);
  }
  return Status::Ok();
}

Status Max(KernelContext& context) { return Fold(context, CudaBinary::kMax, false); }
Status Min(KernelContext& context) { return Fold(context, CudaBinary::kMin, false); }
Status Sum(KernelContext& context) { return Fold(context, CudaBinary::kAdd, false); }
Status Mean(KernelContext& context) { return Fold(context, CudaBinary::kAdd, true); }

Status Where(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* condition, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, RequiredInput(context, 2));
  if (condition->dtype() != DType::kBool) return context.Error(ErrorCode::kInvalidModel, "condition must be bool");
  ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *x, *y));
  const Shape shapes[] = {condition->shape(), x->shape(), y->shape()};
  ONNX_AMP_ASSIGN_OR_RETURN(CudaBroadcast plan, PlanCudaBroadcast(context, shapes));
  ONNX_AMP_ASSIGN_OR_RETURN(const Shape output_shape, BroadcastShapes(shapes));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x->dtype(), output_shape));
  return LaunchCudaWhere(x->dtype(), plan, condition->data<bool>(), x->raw_data(), y->raw_data(), out->raw_data(),
                         LaunchEnvOf(context));
}

Status CastTo(KernelContext& context, const Tensor& input, DType target) {
  if (!CudaCastSupports(target)) return context.UnsupportedDType(target);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, target, input.shape()));
  return LaunchCudaCast(input.dtype(), target, input.raw_data(), out->raw_data(), input.num_elements(),
                        LaunchEnvOf(context));
}

Status Cast(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, RequiredInput(context, 0));
  if (!context.has_attribute("to")) return context.Error(ErrorCode::kInvalidModel, "attribute 'to' is missing");
  const std::optional<DType> target = DTypeFromOnnx(static_cast<int32_t>(context.attr_int("to", 0)));
  if (!target) return context.Error(ErrorCode::kUnsupported, "cast to this ONNX type is not supported");
  return CastTo(context, *input, *target);
}

Status CastLike(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* like, RequiredInput(context, 1));
  return CastTo(context, *input, like->dtype());
}

constexpr uint32_t kNumeric = kCudaFloatDTypes | DTypeBit(DType::kInt32) | DTypeBit(DType::kInt64);
constexpr uint32_t kBool = DTypeBit(DType::kBool);
constexpr uint32_t kCastable = kNumeric | kBool | DTypeBit(DType::kFloat64) | DTypeBit(DType::kInt8) |
                               DTypeBit(DType::kUInt8);

}  // namespace

void RegisterElementwiseCudaKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view domain;
    std::string_view op_type;
    KernelFn compute;
    uint32_t dtypes;
    bool may_inplace;
    uint32_t host_inputs;
  };
  const Entry entries[] = {
      {"", "Abs", PlainUnary<CudaUnary::kAbs>, kCudaFloatDTypes, true, 0},
      {"", "Neg", PlainUnary<CudaUnary::kNeg>, kCudaFloatDTypes, true, 0},
      {"", "Floor", PlainUnary<CudaUnary::kFloor>, kCudaFloatDTypes, true, 0},
      {"", "Ceil", PlainUnary<CudaUnary::kCeil>, kCudaFloatDTypes, true, 0},
      {"", "Round", PlainUnary<CudaUnary::kRound>, kCudaFloatDTypes, true, 0},
      {"", "Reciprocal", PlainUnary<CudaUnary::kReciprocal>, kCudaFloatDTypes, true, 0},
      {"", "Sqrt", PlainUnary<CudaUnary::kSqrt>, kCudaFloatDTypes, true, 0},
      {"", "Exp", PlainUnary<CudaUnary::kExp>, kCudaFloatDTypes, true, 0},
      {"", "Log", PlainUnary<CudaUnary::kLog>, kCudaFloatDTypes, true, 0},
      {"", "Sin", PlainUnary<CudaUnary::kSin>, kCudaFloatDTypes, true, 0},
      {"", "Cos", PlainUnary<CudaUnary::kCos>, kCudaFloatDTypes, true, 0},
      {"", "Tan", PlainUnary<CudaUnary::kTan>, kCudaFloatDTypes, true, 0},
      {"", "Erf", PlainUnary<CudaUnary::kErf>, kCudaFloatDTypes, true, 0},
      {"", "Sign", PlainUnary<CudaUnary::kSign>, kCudaFloatDTypes, true, 0},
      {"", "Relu", PlainUnary<CudaUnary::kRelu>, kCudaFloatDTypes, true, 0},
      {"", "LeakyRelu", LeakyRelu, kCudaFloatDTypes, true, 0},
      {"", "Elu", Elu, kCudaFloatDTypes, true, 0},
      {"", "Selu", Selu, kCudaFloatDTypes, true, 0},
      {"", "Celu", Celu, kCudaFloatDTypes, true, 0},
      {"", "Sigmoid", PlainUnary<CudaUnary::kSigmoid>, kCudaFloatDTypes, true, 0},
      {"", "HardSigmoid", HardSigmoid, kCudaFloatDTypes, true, 0},
      {"", "HardSwish", PlainUnary<CudaUnary::kHardSwish>, kCudaFloatDTypes, true, 0},
      {"", "Softplus", PlainUnary<CudaUnary::kSoftplus>, kCudaFloatDTypes, true, 0},
      {"", "Softsign", PlainUnary<CudaUnary::kSoftsign>, kCudaFloatDTypes, true, 0},
      {"", "Tanh", PlainUnary<CudaUnary::kTanh>, kCudaFloatDTypes, true, 0},
      {"", "ThresholdedRelu", ThresholdedRelu, kCudaFloatDTypes, true, 0},
      {"", "Gelu", Gelu, kCudaFloatDTypes, true, 0},
      {"", "Mish", PlainUnary<CudaUnary::kMish>, kCudaFloatDTypes, true, 0},
      {"", "Clip", Clip, kCudaFloatDTypes, true, InputBit(1) | InputBit(2)},
      {"", "IsNaN", PlainUnary<CudaUnary::kIsNaN>, kCudaFloatDTypes, false, 0},
      {"", "IsInf", IsInf, kCudaFloatDTypes, false, 0},
      {"", "Not", PlainUnary<CudaUnary::kNot>, kBool, true, 0},
      {"", "Add", Binary<CudaBinary::kAdd>, kNumeric, true, 0},
      {"", "Sub", Binary<CudaBinary::kSub>, kNumeric, true, 0},
      {"", "Mul", Binary<CudaBinary::kMul>, kNumeric, true, 0},
      {"", "Div", Binary<CudaBinary::kDiv>, kNumeric, true, 0},
      {"", "Pow", Binary<CudaBinary::kPow>, kCudaFloatDTypes, true, 0},
      {"", "PRelu", Binary<CudaBinary::kPRelu>, kCudaFloatDTypes, true, 0},
      {"", "Equal", Binary<CudaBinary::kEqual>, kNumeric, false, 0},
      {"", "Less", Binary<CudaBinary::kLess>, kNumeric, false, 0},
      {"", "LessOrEqual", Binary<CudaBinary::kLessOrEqual>, kNumeric, false, 0},
      {"", "Greater", Binary<CudaBinary::kGreater>, kNumeric, false, 0},
      {"", "GreaterOrEqual", Binary<CudaBinary::kGreaterOrEqual>, kNumeric, false, 0},
      {"", "And", Binary<CudaBinary::kAnd>, kBool, true, 0},
      {"", "Or", Binary<CudaBinary::kOr>, kBool, true, 0},
      {"", "Xor", Binary<CudaBinary::kXor>, kBool, true, 0},
      {"", "Max", Max, kNumeric, false, 0},
      {"", "Min", Min, kNumeric, false, 0},
      {"", "Sum", Sum, kNumeric, false, 0},
      {"", "Mean", Mean, kCudaFloatDTypes, false, 0},
      {"", "Where", Where, kNumeric, false, 0},
      {"", "Cast", Cast, kCastable, false, 0},
      {"", "CastLike", CastLike, kCastable, false, 0},
      {kOnnxAmpDomain, "ReluGrad", ActivationGrad<CudaBinary::kReluGrad>, kCudaFloatDTypes, true, 0},
      {kOnnxAmpDomain, "SigmoidGrad", ActivationGrad<CudaBinary::kSigmoidGrad>, kCudaFloatDTypes, true, 0},
      {kOnnxAmpDomain, "TanhGrad", ActivationGrad<CudaBinary::kTanhGrad>, kCudaFloatDTypes, true, 0},
      {kOnnxAmpDomain, "GeluGrad", GeluGrad, kCudaFloatDTypes, true, 0},
  };
  for (const Entry& entry : entries) {
    KernelDef def{entry.domain, entry.op_type, DeviceKind::kCuda, entry.compute, entry.may_inplace};
    def.host_inputs = entry.host_inputs;
    def.dtypes = entry.dtypes;
    def.dtype_input = entry.op_type == "Where" ? 1 : 0;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
