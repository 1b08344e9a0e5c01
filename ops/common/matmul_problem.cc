#include "ops/common/matmul_problem.h"

#include <algorithm>
#include <bit>
#include <string>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/converting_relayout.h"
#include "ops/common/few_rows_matmul.h"
#include "ops/common/float_compute.h"
#include "ops/common/fused_activation.h"
#include "ops/common/onednn_utils.h"
#include "ops/common/weight_pack.h"
#include "ops/common/widened_panels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

std::string ProblemKey(const MatMulProblem& p, dt operand_type) {
  return "matmul/" + std::to_string(static_cast<int>(operand_type)) + "/" + dnn::DimsKey(p.a_dims) + ":" +
         dnn::DimsKey(p.a_strides) + "/" + dnn::DimsKey(p.b_dims) + ":" + dnn::DimsKey(p.b_strides) + "/" +
         dnn::DimsKey(p.c_dims) + "/" + std::to_string(std::bit_cast<uint32_t>(p.alpha)) + "/" + (p.accumulate ? "acc" : "set");
}

// The problem's multiply-adds and B's elements, what the bfloat16 kernel choice weighs.
double MultiplyAdds(const MatMulProblem& p) {
  double multiply_adds = static_cast<double>(p.a_dims.back());
  for (const dnnl::memory::dim extent : p.c_dims) multiply_adds *= static_cast<double>(extent);
  return multiply_adds;
}

double WeightElements(const MatMulProblem& p) {
  double elements = 1.0;
  for (const dnnl::memory::dim extent : p.b_dims) elements *= static_cast<double>(extent);
  return elements;
}

// float32 and native bfloat16 products of at least this many multiply-adds bring their
// operands into the layouts oneDNN's kernels compute on before the product (CopiesADense,
// PacksBEachCall): below it the extra pass costs more than it saves.
constexpr double kRelayoutMultiplyAdds = double(1 << 26);

// Whether a dims/strides pair is one matrix (any batch dims 1).
bool IsOneMatrix(const dnnl::memory::dims& dims) {
  for (size_t i = 0; i + 2 < dims.size(); ++i) {
    if (dims[i] != 1) return false;
  }
  return true;
}

// Whether A is a transposed view (one column-major matrix) to copy dense first. oneDNN's
// bfloat16 kernels transpose such an A themselves, block by block inside the product:
// the weight gradients X^T dY of the MLP's mixed_bfloat16 step (4096 x 1024 x 4096, 2
// threads) ran 91 ms that way against 85 ms on a dense A, and the copy takes about 1 ms.
bool CopiesADense(const MatMulProblem& p) {
  const size_t rank = p.a_dims.size();
  const int64_t m = p.a_dims[rank - 2];
  return IsOneMatrix(p.a_dims) && m % 16 == 0 && p.a_strides[rank - 2] == 1 && p.a_strides[rank - 1] == m &&
         dnn::TransposesSupported();
}

// Whether B (one matrix, row-major or transposed, not kept packed by the node) is packed
// on this call (ops/common/weight_pack.h).
bool PacksBEachCall(const MatMulProblem& p, const dnn::WeightsSource& b) {
  const size_t rank = p.b_dims.size();
  const int64_t k = p.b_dims[rank - 2], n = p.b_dims[rank - 1];
  const bool plain = p.b_strides[rank - 2] == n && p.b_strides[rank - 1] == 1;
  const bool transposed = p.b_strides[rank - 2] == 1 && p.b_strides[rank - 1] == k;
  return b.packed == nullptr && IsOneMatrix(p.b_dims) && (plain || transposed);
}

// Copies the transposed A of `problem` (CopiesADense) into `scratch` as a dense
// row-major matrix, in 16-row strips across the threads, and points `problem` at it.
Expected<const void*> CopyADense(KernelContext& context, MatMulProblem& problem, const void* a, Tensor& scratch) {
  const size_t rank = problem.a_dims.size();
  const int64_t m = problem.a_dims[rank - 2], k = problem.a_dims[rank - 1];
  ONNX_AMP_ASSIGN_OR_RETURN(scratch, context.ScratchFloat32((m * k + 1) / 2));
  const auto* from = static_cast<const uint16_t*>(a);
  auto* to = static_cast<uint16_t*>(scratch.raw_data());
  context.threads().ParallelFor(m / 16, 1, [&](int64_t begin, int64_t end) {
    for (int64_t strip = begin; strip < end; ++strip) {
      dnn::PixelsToRows16Bits(from + strip * 16, m, k, to + strip * 16 * k, k);
    }
  });
  problem.a_strides = DenseStrides(problem.a_dims);
  return static_cast<const void*>(to);
}

}  // namespace

dnnl::memory::dims DenseStrides(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

Status RunDnnlMatMul(const MatMulProblem& problem, dt operand_type, const void* a, const void* b, float* c) {
  return RunDnnlMatMul(problem, operand_type, a, dnn::WeightsSource{[b] { return b; }}, FusedActivation{},
                       MatMulDestination{dt::f32, c});
}

Status RunDnnlMatMul(const MatMulProblem& problem, dt operand_type, const void* a, const dnn::WeightsSource& b,
                     const FusedActivation& post_op, const MatMulDestination& c) {
  const dnnl::memory::desc a_md(problem.a_dims, operand_type, problem.a_strides);
  const dnnl::memory::desc b_md(problem.b_dims, operand_type, problem.b_strides);
  const dnnl::memory::desc c_md(problem.c_dims, c.type, DenseStrides(problem.c_dims));
  dnnl::memory::dims bias_dims(problem.c_dims.size(), 1);
  bias_dims.back() = problem.c_dims.back();
  const dnnl::memory::desc bias_md(bias_dims, dt::f32, DenseStrides(bias_dims));
  const bool has_bias = !problem.bias.empty();
  const bool packed = b.packed != nullptr || static_cast<bool>(b.pack_each_call);
  const bool need_optimized = operand_type != dt::f32;
  const std::string key = ProblemKey(problem, operand_type) + ActivationKey(post_op) + (packed ? "/packed" : "") +
                          (has_bias ? "/bias" : "") + (c.type == dt::f32 ? "" : "/low");
  const double multiply_adds = MultiplyAdds(problem);
  if (operand_type == dt::bf16 && !NativeBf16Pays(multiply_adds, WeightElements(problem))) {
    return Unsupported("float32 kernels outrun bfloat16 ones here");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(auto primitive, dnn::CachedPrimitive(key, multiply_adds, [&]() {
    dnnl::primitive_attr attr;
    dnn::PrepareAttr(attr);
    if (problem.alpha != 1.0f) attr.set_output_scales(0, {problem.alpha});
    dnnl::post_ops ops;
    if (problem.accumulate) ops.append_sum(1.0f);
    AppendActivationPostOp(post_op, ops);
    attr.set_post_ops(ops);
    const dnnl::memory::desc weights_md =
        packed ? dnnl::memory::desc(problem.b_dims, operand_type, dnnl::memory::format_tag::any) : b_md;
    const dnnl::matmul::desc desc =
        has_bias ? dnnl::matmul::desc(a_md, weights_md, bias_md, c_md) : dnnl::matmul::desc(a_md, weights_md, c_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, dnn::CpuEngine());
    if (need_optimized && !dnn::IsOptimized(pd)) return std::optional<dnn::Primitive>();
    return std::optional<dnn::Primitive>(dnn::MakePrimitive<dnnl::matmul>(pd));
  }));
  if (!primitive) return Unsupported("no optimised oneDNN matmul for these operands");
  ONNX_AMP_ASSIGN_OR_RETURN(const auto weights, dnn::ResolveWeights(*primitive, key, b_md, b));
  std::unordered_map<int, std::pair<dnnl::memory::desc, const void*>> args{
      {DNNL_ARG_SRC, {a_md, a}}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, {c_md, c.data}}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, std::make_pair(bias_md, problem.bias.data()));
  return dnn::Execute(*primitive, args);
}

bool RelaysOut(const MatMulProblem& problem, dt operand_type) {
  const double multiply_adds = MultiplyAdds(problem);
  return multiply_adds >= kRelayoutMultiplyAdds &&
         (operand_type != dt::bf16 || NativeBf16Pays(multiply_adds, WeightElements(problem)));
}

Status RunRelaidMatMul(KernelContext& context, const MatMulProblem& problem, dt operand_type, const void* a,
                       const dnn::WeightsSource& b, const FusedActivation& post_op, const MatMulDestination& c) {
  if (!RelaysOut(problem, operand_type)) return RunDnnlMatMul(problem, operand_type, a, b, post_op, c);
  MatMulProblem relaid = problem;
  Tensor a_scratch, b_scratch;
  const void* a_data = a;
  if (operand_type == dt::bf16 && CopiesADense(problem)) {
    ONNX_AMP_ASSIGN_OR_RETURN(a_data, CopyADense(context, relaid, a, a_scratch));
  }
  dnn::WeightsSource weights = b;
  if (PacksBEachCall(problem, b)) {
    const void* b_data = b.plain();
    weights.pack_each_call = [&, b_data](const dnnl::memory::desc& layout) {
      return PackB(context, problem, b_data, operand_type, layout, b_scratch);
    };
  }
  return RunDnnlMatMul(relaid, operand_type, a_data, weights, post_op, c);
}

Expected<const void*> PackB(KernelContext& context, const MatMulProblem& problem, const void* b, dt source_type,
                            const dnnl::memory::desc& layout, Tensor& scratch) {
  const int64_t floats = static_cast<int64_t>((layout.get_size() + 3) / 4);
  if (scratch.raw_data() == nullptr || scratch.num_elements() < floats) {
    ONNX_AMP_ASSIGN_OR_RETURN(scratch, context.ScratchFloat32(floats));
  }
  const size_t rank = problem.b_dims.size();
  const bool transposed = problem.b_strides[rank - 1] != 1;
  if (dnn::PacksWeights(layout, source_type)) {
    const int64_t leading = transposed ? problem.b_strides[rank - 1] : problem.b_strides[rank - 2];
    dnn::PackWeights({b, source_type, transposed, leading}, layout, scratch.raw_data(), context.threads());
    return static_cast<const void*>(scratch.raw_data());
  }
  if (source_type != layout.data_type()) return Unsupported("B's type differs from the layout's");
  try {
    const dnnl::engine& engine = dnn::CpuEngine();
    dnnl::memory plain({problem.b_dims, source_type, problem.b_strides}, engine, const_cast<void*>(b));
    dnnl::memory packed(layout, engine, scratch.raw_data());
    dnnl::stream& stream = dnn::ThreadStream();
    dnnl::reorder(plain, packed).execute(stream, plain, packed);
    stream.wait();
  } catch (const dnnl::error& e) {
    return InternalError(std::string("oneDNN cannot pack B: ") + e.what());
  }
  return static_cast<const void*>(scratch.raw_data());
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

namespace {

// C's float32 starting values: the addend (accumulate), the bias rows, or zeros.
void FillStart(const MatMulProblem& problem, const std::vector<double>& addend, float* c, int64_t count) {
  if (problem.accumulate) {
    std::copy(addend.begin(), addend.end(), c);
  } else {
    std::fill(c, c + count, 0.0f);
  }
  if (problem.bias.empty()) return;
  const int64_t n = static_cast<int64_t>(problem.bias.size());
  for (int64_t i = 0; i < count; ++i) c[i] += problem.bias[i % n];
}

// Elements per parallel chunk of the finishing pass.
constexpr int64_t kFinishChunk = 1 << 16;

// Finishes the whole float32 result `c` into `out` (FinishProductBlock), in parallel.
void FinishProduct(const float* c, Tensor& out, DType dtype, const FusedActivation& activation, ThreadPool& threads) {
  threads.ParallelFor(out.num_elements(), kFinishChunk, [&](int64_t begin, int64_t end) {
    FinishProductBlock(c + begin, out, dtype, begin, end - begin, activation);
  });
}

}  // namespace

void FinishProductBlock(const float* c, Tensor& out, DType dtype, int64_t begin, int64_t count,
                        const FusedActivation& activation) {
  if (out.dtype() == dtype) return StoreBlockWithActivation(c, out, begin, count, activation);
  RoundThrough(dtype, c, out.data<float>() + begin, count);
}

Expected<DType> MatMulOutputDType(const KernelContext& context, DType operands) {
  if (!context.widens_output()) return operands;
  if (operands == DType::kFloat32 || IsLowPrecision(operands)) return DType::kFloat32;
  return context.Error(ErrorCode::kInvalidModel, "a Cast to float32 of this node's float16/bfloat16 output was folded in, "
                                                 "but its operands are " + std::string(DTypeName(operands)));
}

Status ComputeMatMul(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                     Tensor& out, const std::vector<double>& addend) {
  const DType dtype = a.dtype();
  // float32 holding dtype's values: a Cast to float32 folded in (no activation then).
  const bool widened = out.dtype() != dtype;
  const FusedActivation& activation = problem.activation;
  ONNX_AMP_ASSERT(!widened || (IsLowPrecision(dtype) && out.dtype() == DType::kFloat32 &&
                               activation.kind == FusedActivationKind::kNone),
                  "a widened matmul output is float32 of a float16/bfloat16 product without an activation");
  if (dtype == DType::kFloat64) {
    double* c = out.data<double>();
    const int64_t n = static_cast<int64_t>(problem.bias.size());
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      c[i] = (problem.accumulate ? addend[i] : 0.0) + (n > 0 ? problem.bias[i % n] : 0.0);
    }
    MatMulProblem summed = problem;
    summed.accumulate = true;
    ReferenceMatMul(summed, a.data<double>(), b.data<double>(), c);
    ApplyActivation(activation, out, context.threads());
    return Status::Ok();
  }
  if (dtype != DType::kFloat32 && !IsLowPrecision(dtype)) return context.UnsupportedDType(dtype);
  if (out.num_elements() == 0) return Status::Ok();
  // An empty sum (K == 0) leaves the bias and addend (or zeros); oneDNN takes no
  // zero-sized dims.
  if (problem.a_dims.back() == 0) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor c, widened ? Expected<Tensor>(out) : context.ScratchFloat32(out.num_elements()));
    FillStart(problem, addend, c.data<float>(), out.num_elements());
    FinishProduct(c.data<float>(), out, dtype, activation, context.threads());
    return Status::Ok();
  }
  // A few rows read B once: at the memory's rate on their own kernels.
  if (TakesFewRows(problem, dtype)) {
    Status status = ComputeFewRowsMatMul(context, problem, a, b, out, addend);
    if (!status.ok()) return context.Error(status.code(), status.message());
    return Status::Ok();
  }
  // Packing pays off for weights: B without batch dims of its own.
  dnn::PackedWeights* packed = problem.packed_b;
  for (size_t i = 0; i + 2 < problem.b_dims.size(); ++i) {
    if (problem.b_dims[i] != 1) packed = nullptr;
  }
  const void* b_data = b.raw_data();
  const dnn::WeightsSource b_source{[b_data] { return b_data; }, packed, b_data};
  // float32 writes straight into the output (the activation as a post-op where that is
  // exact, else in a pass over the output), and so does bfloat16 where its native
  // kernels pay without a full addend (oneDNN rounds, the activation then runs on the
  // rounded values as the separate node would). Otherwise C is a float32 work tensor,
  // rounded once at the end.
  if (dtype == DType::kFloat32) {
    if (problem.accumulate) std::copy(addend.begin(), addend.end(), out.data<float>());
    const FusedActivation post_op = ExactPostOp(activation);
    Status status = RunRelaidMatMul(context, problem, dt::f32, a.raw_data(), b_source, post_op, {dt::f32, out.raw_data()});
    if (!status.ok()) return context.Error(status.code(), status.message());
    if (post_op.kind == FusedActivationKind::kNone) ApplyActivation(activation, out, context.threads());
    return Status::Ok();
  }
  if (dtype == DType::kBFloat16 && !problem.accumulate && !widened) {
    Status status =
        RunRelaidMatMul(context, problem, dt::bf16, a.raw_data(), b_source, FusedActivation{}, {dt::bf16, out.raw_data()});
    if (status.ok()) {
      ApplyActivation(activation, out, context.threads());
      return Status::Ok();
    }
    if (status.code() != ErrorCode::kUnsupported) return context.Error(status.code(), status.message());
  }
  // Large operands without native kernels: widened in panels, finished row by row.
  const bool native_bf16 = dtype == DType::kBFloat16 && NativeBf16Pays(MultiplyAdds(problem), WeightElements(problem));
  if (!native_bf16 && packed == nullptr && WidensInPanels(problem)) {
    Status status = WidenedMatMulInPanels(context, problem, a, b, out, addend);
    if (!status.ok()) return context.Error(status.code(), status.message());
    return Status::Ok();
  }
  // A widened output is its own float32 work tensor.
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor c, widened ? Expected<Tensor>(out) : context.ScratchFloat32(out.num_elements()));
  if (problem.accumulate) std::copy(addend.begin(), addend.end(), c.data<float>());
  Status status = Unsupported("float16 runs on float32 kernels");
  if (native_bf16) {
    status = RunRelaidMatMul(context, problem, dt::bf16, a.raw_data(), b_source, FusedActivation{}, {dt::f32, c.raw_data()});
  }
  if (status.code() == ErrorCode::kUnsupported) {
    // Packed B is widened once, on the run that packs it; plain B on every call.
    ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<Tensor> f32,
                              Float32Copies(context, packed == nullptr ? std::vector<const Tensor*>{&a, &b}
                                                                 : std::vector<const Tensor*>{&a}));
    std::vector<float> b_packing;
    dnn::WeightsSource widened = b_source;
    if (packed == nullptr) {
      widened.plain = [&] { return static_cast<const void*>(f32[1].raw_data()); };
    } else {
      widened.plain = [&] {
        b_packing = ToFloat32(b);
        return static_cast<const void*>(b_packing.data());
      };
    }
    status = RunDnnlMatMul(problem, dt::f32, f32[0].raw_data(), widened, FusedActivation{}, {dt::f32, c.raw_data()});
  }
  if (!status.ok()) return context.Error(status.code(), status.message());
  FinishProduct(c.data<float>(), out, dtype, activation, context.threads());
  return Status::Ok();
}

}  // namespace onnx_amp
