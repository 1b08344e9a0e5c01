#include "ops/linalg/gemm_key.h"

#include <cstdint>
#include <tuple>

namespace onnx_amp {
namespace {

auto Fields(const GemmKey& k) {
  return std::tie(k.m, k.n, k.k, k.batch, k.lda, k.ldb, k.ldc, k.stride_a, k.stride_b, k.stride_c, k.trans_a,
                  k.trans_b, k.operand_dtype, k.output_dtype, k.epilogue, k.accumulate, k.tf32, k.alignment);
}

void Mix(size_t& seed, size_t value) { seed ^= value + 0x9E3779B97F4A7C15ull + (seed << 6) + (seed >> 2); }

}  // namespace

std::string_view GemmEpilogueName(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone: return "none";
    case GemmEpilogue::kBias: return "bias";
    case GemmEpilogue::kReluBias: return "relu+bias";
    case GemmEpilogue::kGeluBias: return "gelu+bias";
    case GemmEpilogue::kRelu: return "relu";
    case GemmEpilogue::kGelu: return "gelu";
    case GemmEpilogue::kDReluBgrad: return "drelu+bgrad";
    case GemmEpilogue::kDGeluBgrad: return "dgelu+bgrad";
    case GemmEpilogue::kBgradB: return "bgradb";
  }
  return "?";
}

bool GemmKey::operator==(const GemmKey& other) const { return Fields(*this) == Fields(other); }

std::string GemmKey::ToString() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " batch " + std::to_string(batch) +
         (trans_a ? " A^T" : "") + (trans_b ? " B^T" : "") + " " + std::string(DTypeName(operand_dtype)) + "->" +
         std::string(DTypeName(output_dtype)) + " epilogue " + std::string(GemmEpilogueName(epilogue)) +
         (tf32 ? " tf32" : "") + " align " + std::to_string(alignment);
}

size_t GemmKeyHash::operator()(const GemmKey& key) const {
  size_t seed = 0;
  for (int64_t value : {key.m, key.n, key.k, key.batch, key.lda, key.ldb, key.ldc, key.stride_a, key.stride_b,
                        key.stride_c}) {
    Mix(seed, std::hash<int64_t>{}(value));
  }
  Mix(seed, (static_cast<size_t>(key.trans_a) << 0) | (static_cast<size_t>(key.trans_b) << 1) |
                (static_cast<size_t>(key.accumulate) << 2) | (static_cast<size_t>(key.tf32) << 3));
  Mix(seed, static_cast<size_t>(key.operand_dtype) * 64 + static_cast<size_t>(key.output_dtype));
  Mix(seed, static_cast<size_t>(key.epilogue) * 32 + static_cast<size_t>(key.alignment));
  return seed;
}

bool MeetsTensorCoreRules(const GemmKey& key, std::string* reason) {
  const auto fail = [&](std::string why) {
    if (reason != nullptr) *reason = std::move(why);
    return false;
  };
  int multiple = 0;
  if (key.operand_dtype == DType::kFloat16 || key.operand_dtype == DType::kBFloat16) {
    multiple = 8;
  } else if (key.operand_dtype == DType::kFloat32 && key.tf32) {
    multiple = 4;
  } else {
    return fail(std::string(DTypeName(key.operand_dtype)) + " operands" +
                (key.operand_dtype == DType::kFloat32 ? " without TF32" : "") + " do not use Tensor Cores");
  }
  const struct {
    const char* name;
    int64_t value;
  } dims[] = {{"M", key.m}, {"N", key.n}, {"K", key.k}, {"lda", key.lda}, {"ldb", key.ldb}, {"ldc", key.ldc}};
  for (const auto& dim : dims) {
    if (dim.value % multiple != 0) {
      return fail(std::string(dim.name) + " = " + std::to_string(dim.value) + " is not a multiple of " +
                  std::to_string(multiple));
    }
  }
  if (key.alignment < 16) return fail("pointers are " + std::to_string(key.alignment) + "-byte aligned, not 16");
  return true;
}

}  // namespace onnx_amp
