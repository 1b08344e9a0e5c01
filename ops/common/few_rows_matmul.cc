#include "ops/common/few_rows_matmul.h"

#include <algorithm>
#include <atomic>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_vec_isa.h"
#include "runtime/exec/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#define ONNX_AMP_FEW_ROWS_X86 1
#else
#define ONNX_AMP_FEW_ROWS_X86 0
#endif

namespace onnx_amp {
namespace {

// Columns per parallel chunk at least: below that a chunk is not worth a thread.
constexpr int64_t kMinChunkColumns = 64;

FewRowsPath WidestPath() {
  for (FewRowsPath path : {FewRowsPath::kAvx512, FewRowsPath::kAvx2}) {
    if (FewRowsPathSupported(path)) return path;
  }
  return FewRowsPath::kNone;
}

std::atomic<FewRowsPath>& Setting() {
  static std::atomic<FewRowsPath> setting(WidestPath());
  return setting;
}

}  // namespace

std::string_view FewRowsPathName(FewRowsPath path) {
  switch (path) {
    case FewRowsPath::kNone: return "none";
    case FewRowsPath::kAvx2: return "avx2";
    case FewRowsPath::kAvx512: return "avx512";
  }
  return "none";
}

bool FewRowsPathSupported(FewRowsPath path) {
  switch (path) {
    case FewRowsPath::kNone: return true;
    case FewRowsPath::kAvx2: return CpuHasFloatVecAvx2();
    case FewRowsPath::kAvx512: return CpuHasFloatVecAvx512();
  }
  return false;
}

FewRowsPath CurrentFewRowsPath() { return Setting().load(); }

FewRowsPath SetFewRowsPath(FewRowsPath path) {
  ONNX_AMP_ASSERT(FewRowsPathSupported(path), "this CPU lacks the few-rows kernel path asked for");
  return Setting().exchange(path);
}

bool TakesFewRows(const MatMulProblem& problem, DType dtype) {
  if (problem.a_dims.size() != 2 || problem.a_dims[0] > kFewRowsMax || problem.a_dims[1] == 0) return false;
  if (dtype != DType::kFloat32 && !IsLowPrecision(dtype)) return false;
  // Forced native bfloat16 kernels (bf16_kernel_choice.h) stay oneDNN's.
  if (dtype == DType::kBFloat16 && CurrentBf16Kernels() == Bf16Kernels::kNative) return false;
  if (problem.b_strides[0] != 1 && problem.b_strides[1] != 1) return false;
  return CurrentFewRowsPath() != FewRowsPath::kNone;
}

Status ComputeFewRowsMatMul(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                            Tensor& out, const std::vector<double>& addend) {
  if (!TakesFewRows(problem, a.dtype())) return Unsupported("not a product of a few rows on this CPU");
  const int64_t m = problem.a_dims[0], k = problem.a_dims[1], n = problem.b_dims[1];
  // A's few rows, widened and dense.
  const std::vector<float> a_all = ToFloat32(a);
  std::vector<float> a_rows(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t kk = 0; kk < k; ++kk) a_rows[i * k + kk] = a_all[i * problem.a_strides[0] + kk * problem.a_strides[1]];
  }
  std::vector<float> sums(static_cast<size_t>(m * n));
  FewRowsArgs args;
  args.a = a_rows.data();
  args.rows = static_cast<int>(m);
  args.k = k;
  args.w = b.raw_data();
  args.w_dtype = b.dtype();
  args.w_k_stride = problem.b_strides[0];
  args.w_n_stride = problem.b_strides[1];
  args.y = sums.data();
  args.y_stride = n;
  void (*kernel)(const FewRowsArgs&) = nullptr;
#if ONNX_AMP_FEW_ROWS_X86
  kernel = CurrentFewRowsPath() == FewRowsPath::kAvx512 ? FewRowsAvx512 : FewRowsAvx2;
#endif
  ThreadPool& threads = context.threads();
  const int64_t per_thread = (n + threads.num_threads() - 1) / std::max(threads.num_threads(), 1);
  const int64_t grain = std::max(kMinChunkColumns, (per_thread + 15) / 16 * 16);
  const DType dtype = a.dtype();
  threads.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    FewRowsArgs chunk = args;
    chunk.n_begin = begin;
    chunk.n_end = end;
    kernel(chunk);
    for (int64_t i = 0; i < m; ++i) {
      float* row = sums.data() + i * n;
      for (int64_t j = begin; j < end; ++j) {
        float value = problem.alpha * row[j];
        if (!problem.bias.empty()) value += problem.bias[j];
        if (problem.accumulate) value += static_cast<float>(addend[i * n + j]);
        row[j] = value;
      }
      FinishProductBlock(row + begin, out, dtype, i * n + begin, end - begin, problem.activation);
    }
  });
  return Status::Ok();
}

}  // namespace onnx_amp
