// What selects a cuBLASLt GEMM algorithm, host-only so that the CPU tests cover it: the
// problem's shape, layout, dtypes, epilogue and pointer alignment (the key of the
// per-device algorithm cache), and the Tensor Core rules (dimensions multiples of 8 for
// 16-bit operands, 4 for TF32, 16-byte aligned pointers) that decide whether a GEMM
// reaches the Tensor Cores at full speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "ops/common/pointer_alignment.h"
#include "runtime/core/dtype.h"

namespace onnx_amp {

// The epilogues the CUDA GEMMs use: cuBLASLt's bias and activation forward, and the
// backward ones that fuse an activation's gradient and the bias gradient.
enum class GemmEpilogue {
  kNone,
  kBias,          // D = AB + bias (bias per output column)
  kReluBias,      // D = relu(AB + bias)
  kGeluBias,      // D = gelu(AB + bias) (tanh form, cuBLASLt's)
  kRelu,
  kGelu,
  kDReluBgrad,    // D = AB * relu'(aux), bias gradient = column sums of D
  kDGeluBgrad,    // D = AB * gelu'(aux), bias gradient = column sums of D
  kBgradB,        // D = AB, bias gradient = sums of B over its reduced dimension
};

std::string_view GemmEpilogueName(GemmEpilogue epilogue);

// A row-major problem D[m, n] = alpha * op(A)[m, k] @ op(B)[k, n] + beta * C, `batch`
// times with element strides between the matrices (0: shared by every batch).
struct GemmKey {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row-major leading dimensions, as stored
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  bool trans_a = false, trans_b = false;
  DType operand_dtype = DType::kFloat32;  // A and B
  DType output_dtype = DType::kFloat32;   // C and D
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  bool accumulate = false;  // beta != 0: C is read
  bool tf32 = false;        // float32 operands on TF32 Tensor Cores
  int alignment = 16;       // bytes every pointer is aligned to (16, 8, 4 or 2)

  bool operator==(const GemmKey& other) const;
  std::string ToString() const;
};

struct GemmKeyHash {
  size_t operator()(const GemmKey& key) const;
};

// Whether the problem meets the Tensor Core rules for its operand dtype: m, n, k and the
// leading dimensions multiples of 8 (16-bit) or 4 (TF32), pointers 16-byte aligned.
// Plain float32 (no TF32) never reaches the Tensor Cores. Names the first rule missed
// in `reason` when given.
bool MeetsTensorCoreRules(const GemmKey& key, std::string* reason = nullptr);

}  // namespace onnx_amp
