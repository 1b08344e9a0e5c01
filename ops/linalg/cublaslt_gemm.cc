#include "ops/linalg/cublaslt_gemm.h"

#include <cublasLt.h>

#include <memory>
#include <mutex>
#include <unordered_map>

namespace onnx_amp {
namespace {

// cuBLASLt's recommended workspace on Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

Status LtStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusString(status));
}

#define ONNX_AMP_LT_RETURN_IF_ERROR(call, what) ONNX_AMP_RETURN_IF_ERROR(LtStatus((call), (what)))

cudaDataType_t CudaType(DType dtype) {
  if (dtype == DType::kFloat16) return CUDA_R_16F;
  if (dtype == DType::kBFloat16) return CUDA_R_16BF;
  return CUDA_R_32F;
}

cublasLtEpilogue_t LtEpilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::kGeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case GemmEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kGelu: return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::kDReluBgrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case GemmEpilogue::kDGeluBgrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case GemmEpilogue::kBgradB: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool EpilogueTakesBias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias || epilogue == GemmEpilogue::kReluBias ||
         epilogue == GemmEpilogue::kGeluBias || epilogue == GemmEpilogue::kDReluBgrad ||
         epilogue == GemmEpilogue::kDGeluBgrad || epilogue == GemmEpilogue::kBgradB;
}

// The descriptors and algorithm of one GemmKey. cuBLASLt is column-major: the row-major
// D = op(A) op(B) is computed as D^T = op(B)^T op(A)^T, i.e. with the operands swapped.
struct GemmPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  size_t workspace = 0;

  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    if (layout_c != nullptr) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
  }
};

class GemmPlanCache final : public CudaDeviceCache {
 public:
  std::mutex mutex;
  std::unordered_map<GemmKey, std::unique_ptr<GemmPlan>, GemmKeyHash> plans;
};

// A column-major layout of rows x cols with leading dimension ld, batched.
Status MakeLayout(cublasLtMatrixLayout_t* layout, DType dtype, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride) {
  ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(layout, CudaType(dtype), static_cast<uint64_t>(rows),
                                                         static_cast<uint64_t>(cols), ld),
                              "layout");
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    ONNX_AMP_LT_RETURN_IF_ERROR(
        cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
        "batch count");
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                 &stride, sizeof(stride)),
                                "batch stride");
  }
  return Status::Ok();
}

Expected<std::unique_ptr<GemmPlan>> MakePlan(CudaDevice& device, const GemmKey& key) {
  auto plan = std::make_unique<GemmPlan>();
  const bool tf32 = key.operand_dtype == DType::kFloat32 && key.tf32;
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->operation, compute, CUDA_R_32F), "operation");
  // Swapped operands: cuBLASLt's A is our B, its B our A.
  const cublasOperation_t op_a = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ONNX_AMP_LT_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)), "transa");
  ONNX_AMP_LT_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)), "transb");
  const cublasLtEpilogue_t epilogue = LtEpilogue(key.epilogue);
  ONNX_AMP_LT_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
      "epilogue");
  if (EpilogueTakesBias(key.epilogue)) {
    const cudaDataType_t bias_type = CudaType(key.output_dtype);
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                               &bias_type, sizeof(bias_type)),
                                "bias type");
  }
  // Our B as stored: [k, n] (or [n, k] transposed) row-major is n x k (k x n) column-major.
  ONNX_AMP_RETURN_IF_ERROR(MakeLayout(&plan->layout_a, key.operand_dtype, key.trans_b ? key.k : key.n,
                                      key.trans_b ? key.n : key.k, key.ldb, key.batch, key.stride_b));
  ONNX_AMP_RETURN_IF_ERROR(MakeLayout(&plan->layout_b, key.operand_dtype, key.trans_a ? key.m : key.k,
                                      key.trans_a ? key.k : key.m, key.lda, key.batch, key.stride_a));
  ONNX_AMP_RETURN_IF_ERROR(
      MakeLayout(&plan->layout_c, key.output_dtype, key.n, key.m, key.ldc, key.batch, key.stride_c));

  cublasLtMatmulPreference_t preference = nullptr;
  ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference), "preference");
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, decltype(&cublasLtMatmulPreferenceDestroy)>
      preference_owner(preference, cublasLtMatmulPreferenceDestroy);
  const size_t workspace = kWorkspaceBytes;
  ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                   &workspace, sizeof(workspace)),
                              "workspace preference");
  const uint32_t alignment = static_cast<uint32_t>(key.alignment);
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment, sizeof(alignment)),
                                "alignment preference");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(device.cublas_lt(), plan->operation, plan->layout_a, plan->layout_b,
                                     plan->layout_c, plan->layout_c, preference, 1, &result, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    return Unsupported("cuBLASLt has no algorithm for the GEMM " + key.ToString() +
                       (status != CUBLAS_STATUS_SUCCESS ? std::string(": ") + cublasLtGetStatusString(status) : ""));
  }
  plan->algorithm = result.algo;
  plan->workspace = result.workspaceSize;
  return plan;
}

Expected<GemmPlan*> PlanFor(CudaDevice& device, const GemmKey& key) {
  GemmPlanCache& cache = device.Cache<GemmPlanCache>();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) return it->second.get();
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GemmPlan> plan, MakePlan(device, key));
  GemmPlan* raw = plan.get();
  cache.plans.emplace(key, std::move(plan));
  return raw;
}

}  // namespace

Status RunCudaGemm(CudaDevice& device, CudaGemmCall call) {
  GemmKey& key = call.key;
  if (key.m == 0 || key.n == 0 || key.batch == 0) return Status::Ok();
  key.tf32 = key.operand_dtype == DType::kFloat32 && device.allow_tf32();
  key.accumulate = call.beta != 0.0f;
  key.alignment = CommonAlignment({call.a, call.b, call.d, key.accumulate ? call.c : call.d});
  ONNX_AMP_ASSIGN_OR_RETURN(GemmPlan * plan, PlanFor(device, key));
  if (EpilogueTakesBias(key.epilogue)) {
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                               &call.bias, sizeof(call.bias)),
                                "bias pointer");
  }
  if (key.epilogue == GemmEpilogue::kDReluBgrad || key.epilogue == GemmEpilogue::kDGeluBgrad) {
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->operation,
                                                               CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &call.aux,
                                                               sizeof(call.aux)),
                                "aux pointer");
    ONNX_AMP_LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                               &call.aux_ld, sizeof(call.aux_ld)),
                                "aux ld");
  }
  void* workspace = nullptr;
  if (plan->workspace > 0) {
    ONNX_AMP_ASSIGN_OR_RETURN(workspace, device.Workspace(kWorkspaceBytes));
  }
  const void* c = key.accumulate ? call.c : call.d;
  return LtStatus(cublasLtMatmul(device.cublas_lt(), plan->operation, &call.alpha, call.b, plan->layout_a, call.a,
                                 plan->layout_b, &call.beta, c, plan->layout_c, call.d, plan->layout_c,
                                 &plan->algorithm, workspace, plan->workspace, device.stream()),
                  "matmul");
}

size_t CudaGemmPlanCount(CudaDevice& device) {
  GemmPlanCache& cache = device.Cache<GemmPlanCache>();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.plans.size();
}

}  // namespace onnx_amp
