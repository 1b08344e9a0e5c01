#include "ops/common/matmul_problem.h"

#include <algorithm>
#include <bit>
#include <string>

#include "ops/common/float_compute.h"
#include "ops/common/fused_activation.h"
#include "ops/common/onednn_utils.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

std::string ProblemKey(const MatMulProblem& p, dt operand_type) {
  return "matmul/" + std::to_string(static_cast<int>(operand_type)) + "/" + dnn::DimsKey(p.a_dims) + ":" +
         dnn::DimsKey(p.a_strides) + "/" + dnn::DimsKey(p.b_dims) + ":" + dnn::DimsKey(p.b_strides) + "/" +
         dnn::DimsKey(p.c_dims) + "/" + std::to_string(std::bit_cast<uint32_t>(p.alpha)) + "/" + (p.accumulate ? "acc" : "set");
}

}  // namespace

dnnl::memory::dims DenseStrides(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

Status RunDnnlMatMul(const MatMulProblem& problem, dt operand_type, const void* a, const void* b, float* c) {
  return RunDnnlMatMul(problem, operand_type, a, dnn::WeightsSource{[b] { return b; }}, FusedActivation{}, c);
}

Status RunDnnlMatMul(const MatMulProblem& problem, dt operand_type, const void* a, const dnn::WeightsSource& b,
                     const FusedActivation& post_op, float* c) {
  const dnnl::memory::desc a_md(problem.a_dims, operand_type, problem.a_strides);
  const dnnl::memory::desc b_md(problem.b_dims, operand_type, problem.b_strides);
  const dnnl::memory::desc c_md(problem.c_dims, dt::f32, DenseStrides(problem.c_dims));
  const bool packed = b.packed != nullptr;
  const bool need_optimized = operand_type != dt::f32;
  const std::string key = ProblemKey(problem, operand_type) + ActivationKey(post_op) + (packed ? "/packed" : "");
  ONNX_AMP_ASSIGN_OR_RETURN(auto primitive, dnn::CachedPrimitive(key, [&]() {
    dnnl::primitive_attr attr;
    dnn::PrepareAttr(attr);
    if (problem.alpha != 1.0f) attr.set_output_scales(0, {problem.alpha});
    dnnl::post_ops ops;
    if (problem.accumulate) ops.append_sum(1.0f);
    AppendActivationPostOp(post_op, ops);
    attr.set_post_ops(ops);
    const dnnl::memory::desc weights_md =
        packed ? dnnl::memory::desc(problem.b_dims, operand_type, dnnl::memory::format_tag::any) : b_md;
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, weights_md, c_md), attr, dnn::CpuEngine());
    if (need_optimized && !dnn::IsOptimized(pd)) return std::optional<dnn::Primitive>();
    return std::optional<dnn::Primitive>(dnn::MakePrimitive<dnnl::matmul>(pd));
  }));
  if (!primitive) return Unsupported("no optimised oneDNN matmul for these operands");
  ONNX_AMP_ASSIGN_OR_RETURN(const auto weights, dnn::ResolveWeights(*primitive, key, b_md, b));
  return dnn::Execute(*primitive, {{DNNL_ARG_SRC, {a_md, a}}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, {c_md, c}}});
}

void ReferenceMatMul(const MatMulProblem& p, const double* a, const double* b, double* c) {
  const int rank = static_cast<int>(p.c_dims.size());
  const int64_t m = p.c_dims[rank - 2], n = p.c_dims[rank - 1], k = p.a_dims[rank - 1];
  int64_t batches = 1;
  for (int i = 0; i < rank - 2; ++i) batches *= p.c_dims[i];
  const auto c_strides = DenseStrides(p.c_dims);
  for (int64_t batch = 0; batch < batches; ++batch) {
    // Batch offsets; a broadcast (size-1) dim contributes nothing.
    int64_t rest = batch, a_off = 0, b_off = 0, c_off = 0;
    for (int i = rank - 3; i >= 0; --i) {
      const int64_t index = rest % p.c_dims[i];
      rest /= p.c_dims[i];
      if (p.a_dims[i] != 1) a_off += index * p.a_strides[i];
      if (p.b_dims[i] != 1) b_off += index * p.b_strides[i];
      c_off += index * c_strides[i];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          sum += a[a_off + i * p.a_strides[rank - 2] + kk * p.a_strides[rank - 1]] *
                 b[b_off + kk * p.b_strides[rank - 2] + j * p.b_strides[rank - 1]];
        }
        double& out = c[c_off + i * n + j];
        out = p.alpha * sum + (p.accumulate ? out : 0.0);
      }
    }
  }
}

Status ComputeMatMul(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                     Tensor& out, const std::vector<double>& addend) {
  const DType dtype = out.dtype();
  const FusedActivation& activation = problem.activation;
  if (dtype == DType::kFloat64) {
    double* c = out.data<double>();
    if (problem.accumulate) {
      std::copy(addend.begin(), addend.end(), c);
    } else {
      std::fill(c, c + out.num_elements(), 0.0);
    }
    ReferenceMatMul(problem, a.data<double>(), b.data<double>(), c);
    ApplyActivation(activation, out, context.threads());
    return Status::Ok();
  }
  if (dtype != DType::kFloat32 && !IsLowPrecision(dtype)) return context.UnsupportedDType(dtype);
  if (out.num_elements() == 0) return Status::Ok();
  // float32 writes straight into the output (the activation as a post-op where that is
  // exact, else in a pass over the output); low precision goes through a float32 C that
  // is rounded once at the end, and the activation then runs on the rounded values as
  // the separate node would.
  std::vector<float> c_f32;
  float* c = out.data<float>();
  if (dtype != DType::kFloat32) {
    c_f32.resize(static_cast<size_t>(out.num_elements()));
    c = c_f32.data();
  }
  if (problem.accumulate) std::copy(addend.begin(), addend.end(), c);
  // An empty sum (K == 0) leaves the addend (or zeros); oneDNN takes no zero-sized dims.
  if (problem.a_dims.back() == 0) {
    if (!problem.accumulate) std::fill(c, c + out.num_elements(), 0.0f);
    StoreWithActivation(c, out, activation, context.threads());
    return Status::Ok();
  }
  // Packing pays off for weights: B without batch dims of its own.
  dnn::PackedWeights* packed = problem.packed_b;
  for (size_t i = 0; i + 2 < problem.b_dims.size(); ++i) {
    if (problem.b_dims[i] != 1) packed = nullptr;
  }
  const void* b_data = b.raw_data();
  const dnn::WeightsSource b_source{[b_data] { return b_data; }, packed, b_data};
  Status status = Unsupported("float16 runs on float32 panels");
  const FusedActivation post_op = ExactPostOp(activation);
  if (dtype == DType::kFloat32) {
    status = RunDnnlMatMul(problem, dt::f32, a.raw_data(), b_source, post_op, c);
  } else if (dtype == DType::kBFloat16) {
    status = RunDnnlMatMul(problem, dt::bf16, a.raw_data(), b_source, FusedActivation{}, c);
  }
  if (status.code() == ErrorCode::kUnsupported && dtype != DType::kFloat32) {
    // Widening to float32 is exact, so this computes the same products. Packed B is
    // widened once, on the run that packs it.
    const std::vector<float> a_f32 = ToFloat32(a);
    std::vector<float> b_f32;
    dnn::WeightsSource widened = b_source;
    widened.plain = [&] {
      b_f32 = ToFloat32(b);
      return static_cast<const void*>(b_f32.data());
    };
    if (problem.accumulate) std::copy(addend.begin(), addend.end(), c);
    status = RunDnnlMatMul(problem, dt::f32, a_f32.data(), widened, FusedActivation{}, c);
  }
  if (!status.ok()) return context.Error(status.code(), status.message());
  if (dtype != DType::kFloat32) {
    StoreWithActivation(c, out, activation, context.threads());
  } else if (post_op.kind == FusedActivationKind::kNone) {
    ApplyActivation(activation, out, context.threads());
  }
  return Status::Ok();
}

}  // namespace onnx_amp
