// MatMul and Gemm on the GPU (cublaslt_gemm.h). Gemm's C becomes cuBLASLt's bias
// epilogue when it is a row vector and beta is 1, and cuBLASLt's C matrix otherwise
// (broadcast into the output first when it is smaller); a fused Relu becomes the ReLU
// epilogue, a fused LeakyRelu or Clip runs on the output after the GEMM. MatMul folds
// the batch of A into M when B is a plain matrix, runs one strided batched GEMM when
// each operand's batch matches the output's or is broadcast whole, and one GEMM per
// batch index otherwise.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ops/common/cuda_activation.h"
#include "ops/common/cuda_copy.h"
#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/linalg/cublaslt_gemm.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

bool IsFloat(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// The epilogue that applies `activation` with or without a bias; other activations run
// as a separate pass (ApplyActivationPass).
GemmEpilogue EpilogueFor(const FusedActivation& activation, bool bias) {
  if (activation.kind == FusedActivationKind::kRelu) return bias ? GemmEpilogue::kReluBias : GemmEpilogue::kRelu;
  return bias ? GemmEpilogue::kBias : GemmEpilogue::kNone;
}

// A fused LeakyRelu or Clip (or a Relu no epilogue took) applied to the output in place.
Status ApplyActivationPass(const KernelContext& context, const FusedActivation& activation, Tensor& out) {
  CudaActivation kind = CudaActivation::kNone;
  switch (activation.kind) {
    case FusedActivationKind::kNone: kind = CudaActivation::kNone; break;
    case FusedActivationKind::kRelu: kind = CudaActivation::kRelu; break;
    case FusedActivationKind::kLeakyRelu: kind = CudaActivation::kLeakyRelu; break;
    case FusedActivationKind::kClip: kind = CudaActivation::kClip; break;
  }
  return LaunchCudaActivation(kind, activation.alpha, activation.beta, out.dtype(), out.raw_data(),
                              out.num_elements(), LaunchEnvOf(context));
}

// NumPy's broadcast of two shapes; nullopt when they do not broadcast.
std::optional<Shape> BroadcastOf(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Status Gemm(KernelContext& context) {
  const Tensor* a = context.input(0);
  const Tensor* b = context.input(1);
  const Tensor* c = context.input(2);
  if (a == nullptr || b == nullptr) return context.Error(ErrorCode::kInvalidModel, "Gemm needs inputs A and B");
  if (a->rank() != 2 || b->rank() != 2) return context.Error(ErrorCode::kInvalidModel, "Gemm takes 2-D A and B");
  if (a->dtype() != b->dtype() || (c != nullptr && c->dtype() != a->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "A, B and C have different dtypes");
  }
  if (!IsFloat(a->dtype())) return context.UnsupportedDType(a->dtype());
  GemmKey key;
  key.trans_a = context.attr_int("transA", 0) != 0;
  key.trans_b = context.attr_int("transB", 0) != 0;
  key.m = key.trans_a ? a->dim(1) : a->dim(0);
  key.k = key.trans_a ? a->dim(0) : a->dim(1);
  key.n = key.trans_b ? b->dim(0) : b->dim(1);
  if ((key.trans_b ? b->dim(1) : b->dim(0)) != key.k) {
    return context.Error(ErrorCode::kInvalidModel, "inner dimensions differ: A " + ShapeToString(a->shape()) +
                                                       ", B " + ShapeToString(b->shape()));
  }
  key.lda = a->dim(1);
  key.ldb = b->dim(1);
  key.ldc = key.n;
  key.operand_dtype = key.output_dtype = a->dtype();
  const float alpha = context.attr_float("alpha", 1.0f);
  const float beta = c != nullptr ? context.attr_float("beta", 1.0f) : 0.0f;
  const FusedActivation activation = context.fused_activation();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, a->dtype(), {key.m, key.n}));

  CudaGemmCall call;
  call.a = a->raw_data();
  call.b = b->raw_data();
  call.d = y->raw_data();
  call.alpha = alpha;
  const bool row_bias = c != nullptr && beta == 1.0f && c->num_elements() == key.n &&
                        (c->shape() == Shape{key.n} || c->shape() == Shape{1, key.n});
  if (row_bias) {
    call.bias = const_cast<void*>(c->raw_data());
  } else if (c != nullptr && beta != 0.0f) {
    const std::optional<Shape> broadcast = BroadcastOf({key.m, key.n}, c->shape());
    if (!broadcast || *broadcast != Shape{key.m, key.n}) {
      return context.Error(ErrorCode::kInvalidModel, "C " + ShapeToString(c->shape()) + " does not broadcast to [" +
                                                         std::to_string(key.m) + "," + std::to_string(key.n) + "]");
    }
    call.beta = beta;
    if (c->shape() == Shape{key.m, key.n}) {
      call.c = c->raw_data();
    } else {
      ONNX_AMP_RETURN_IF_ERROR(LaunchCudaBroadcastCopy(DTypeSize(c->dtype()), c->shape(), y->shape(), c->raw_data(),
                                                       y->raw_data(), LaunchEnvOf(context)));
      call.c = y->raw_data();
    }
  }
  // cuBLASLt's ReLU runs before the output's rounding, which commutes with it.
  const bool epilogue_activation = activation.kind == FusedActivationKind::kRelu && call.beta == 0.0f;
  key.epilogue = EpilogueFor(epilogue_activation ? activation : FusedActivation{}, row_bias);
  call.key = key;
  ONNX_AMP_RETURN_IF_ERROR(RunCudaGemm(CudaOf(context), call));
  return epilogue_activation ? Status::Ok() : ApplyActivationPass(context, activation, *y);
}

// MatMul's operands promoted to rank >= 2, with the output's batch dims.
struct MatMulShapes {
  Shape a, b, out;       // promoted operand shapes and the promoted output shape
  Shape result;          // the output shape as MatMul defines it (promoted dims removed)
  Shape batch;           // broadcast batch dims
  int64_t m = 0, k = 0, n = 0;
};

Expected<MatMulShapes> PlanMatMul(const KernelContext& context, const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) return context.Error(ErrorCode::kInvalidModel, "MatMul operands need rank >= 1");
  MatMulShapes s;
  s.a = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape();
  s.b = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape();
  s.m = s.a[s.a.size() - 2];
  s.k = s.a.back();
  s.n = s.b.back();
  if (s.b[s.b.size() - 2] != s.k) {
    return context.Error(ErrorCode::kInvalidModel, "inner dimensions differ: " + ShapeToString(a.shape()) + " @ " +
                                                       ShapeToString(b.shape()));
  }
  const Shape a_batch(s.a.begin(), s.a.end() - 2), b_batch(s.b.begin(), s.b.end() - 2);
  const std::optional<Shape> batch = BroadcastOf(a_batch, b_batch);
  if (!batch) {
    return context.Error(ErrorCode::kInvalidModel, "batch dims of " + ShapeToString(a.shape()) + " and " +
                                                       ShapeToString(b.shape()) + " do not broadcast");
  }
  s.batch = *batch;
  s.out = s.batch;
  s.out.push_back(s.m);
  s.out.push_back(s.n);
  s.result = s.batch;
  if (a.rank() > 1) s.result.push_back(s.m);
  if (b.rank() > 1) s.result.push_back(s.n);
  return s;
}

// The element offset of operand `shape`'s matrix for output batch index `index`.
int64_t BatchOffset(const Shape& shape, const Shape& batch, int64_t index) {
  const int64_t rank = static_cast<int64_t>(shape.size()) - 2;
  const int64_t lead = static_cast<int64_t>(batch.size()) - rank;
  int64_t offset = 0, stride = shape[shape.size() - 2] * shape.back();
  for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
    const int64_t position = index % batch[d];
    index /= batch[d];
    if (d < lead) continue;
    if (shape[d - lead] != 1) offset += position * stride;
    stride *= shape[d - lead];
  }
  return offset;
}

// The batch stride of an operand whose batch is the output's (the matrix size) or is
// broadcast whole (0); -1 when it broadcasts only some dims.
int64_t UniformBatchStride(const Shape& shape, const Shape& batch) {
  const Shape own(shape.begin(), shape.end() - 2);
  const int64_t matrix = shape[shape.size() - 2] * shape.back();
  if (NumElements(own) == 1) return 0;
  Shape padded(batch.size() - own.size(), 1);
  padded.insert(padded.end(), own.begin(), own.end());
  return padded == batch ? matrix : -1;
}

Status MatMul(KernelContext& context) {
  const Tensor* a = context.input(0);
  const Tensor* b = context.input(1);
  if (a == nullptr || b == nullptr) return context.Error(ErrorCode::kInvalidModel, "MatMul needs A and B");
  if (a->dtype() != b->dtype()) return context.Error(ErrorCode::kInvalidModel, "A and B have different dtypes");
  if (!IsFloat(a->dtype())) return context.UnsupportedDType(a->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const MatMulShapes s, PlanMatMul(context, *a, *b));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, a->dtype(), s.result));
  const FusedActivation activation = context.fused_activation();
  const bool relu = activation.kind == FusedActivationKind::kRelu;
  GemmKey key;
  key.m = s.m;
  key.n = s.n;
  key.k = s.k;
  key.lda = s.k;
  key.ldb = s.n;
  key.ldc = s.n;
  key.operand_dtype = key.output_dtype = a->dtype();
  key.epilogue = EpilogueFor(relu ? activation : FusedActivation{}, false);
  CudaGemmCall call;
  call.a = a->raw_data();
  call.b = b->raw_data();
  call.d = y->raw_data();
  CudaDevice& device = CudaOf(context);
  const int64_t batch = NumElements(s.batch);
  const int64_t stride_a = UniformBatchStride(s.a, s.batch);
  const int64_t stride_b = UniformBatchStride(s.b, s.batch);
  if (stride_b == 0 && stride_a != 0 && stride_a != -1) {
    key.m = s.m * batch;  // B shared by every batch: one GEMM over A's rows
  } else if (stride_a >= 0 && stride_b >= 0) {
    key.batch = batch;
    key.stride_a = stride_a;
    key.stride_b = stride_b;
    key.stride_c = s.m * s.n;
  } else {
    const size_t width = DTypeSize(a->dtype());
    for (int64_t index = 0; index < batch; ++index) {
      CudaGemmCall one = call;
      one.key = key;
      one.a = static_cast<const char*>(call.a) + BatchOffset(s.a, s.batch, index) * width;
      one.b = static_cast<const char*>(call.b) + BatchOffset(s.b, s.batch, index) * width;
      one.d = static_cast<char*>(call.d) + index * s.m * s.n * width;
      ONNX_AMP_RETURN_IF_ERROR(RunCudaGemm(device, one));
    }
    return relu ? Status::Ok() : ApplyActivationPass(context, activation, *y);
  }
  call.key = key;
  ONNX_AMP_RETURN_IF_ERROR(RunCudaGemm(device, call));
  return relu ? Status::Ok() : ApplyActivationPass(context, activation, *y);
}

}  // namespace

void RegisterLinalgCudaKernels(KernelRegistry& registry) {
  for (const auto& [op, compute] : {std::pair<std::string_view, KernelFn>{"Gemm", Gemm}, {"MatMul", MatMul}}) {
    KernelDef def{"", op, DeviceKind::kCuda, compute};
    def.fuses_activation = true;
    def.dtypes = kCudaFloatDTypes;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
