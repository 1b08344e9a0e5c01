// The precision part of every op's definition: its class under each mixed policy and
// the inputs that must stay float32. The list itself is ops/ops.def (one line per op,
// with the numeric reason); the converter asks this table and policies override it.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

// How an op takes part in painting a graph (TensorFlow's auto-mixed-precision lists).
enum class PrecisionClass {
  kAllow,      // GEMM-class: worth running low, numerically safe with float32 accumulation
  kInfer,      // safe low when its neighbours are low; stays float32 next to float32 work
  kDeny,       // overflow or accuracy risk in the low dtype; floods float32 forward
  kClear,      // moves or selects values without arithmetic; takes its neighbours' dtype
  kFixedFp32,  // never converted (schema, sequence types, random dtypes, unknown op)
};

std::string_view PrecisionClassName(PrecisionClass precision_class);

// Bit set of input indices: InputBit(1) | InputBit(2).
constexpr uint32_t InputBit(int index) { return 1u << index; }

struct OpPrecisionDef {
  std::string_view name;
  std::string_view domain;  // "" for the default ONNX domain
  PrecisionClass mixed_float16;
  PrecisionClass mixed_bfloat16;
  uint32_t fixed_fp32_inputs;  // inputs kept float32 whatever the policy
};

// Looks the op up in ops.def; "ai.onnx" is the default domain. nullptr when unknown.
const OpPrecisionDef* FindOpPrecision(std::string_view domain, std::string_view name);

// The whole table, in ops.def order.
struct OpPrecisionTable {
  const OpPrecisionDef* begin;
  const OpPrecisionDef* end;
};
OpPrecisionTable AllOpPrecisions();

namespace op_def_detail {

inline constexpr OpPrecisionDef kOpPrecisions[] = {
#define ONNX_AMP_OP(name, domain, fp16_class, bf16_class, fixed_inputs) \
  {name, domain, PrecisionClass::fp16_class, PrecisionClass::bf16_class, fixed_inputs},
#include "ops/ops.def"
#undef ONNX_AMP_OP
};

}  // namespace op_def_detail

inline std::string_view PrecisionClassName(PrecisionClass precision_class) {
  switch (precision_class) {
    case PrecisionClass::kAllow: return "allow";
    case PrecisionClass::kInfer: return "infer";
    case PrecisionClass::kDeny: return "deny";
    case PrecisionClass::kClear: return "clear";
    case PrecisionClass::kFixedFp32: return "fixed_fp32";
  }
  return "?";
}

inline OpPrecisionTable AllOpPrecisions() {
  return {std::begin(op_def_detail::kOpPrecisions), std::end(op_def_detail::kOpPrecisions)};
}

inline const OpPrecisionDef* FindOpPrecision(std::string_view domain, std::string_view name) {
  domain = CanonicalDomain(domain);
  for (const OpPrecisionDef& def : op_def_detail::kOpPrecisions) {
    if (def.name == name && def.domain == domain) return &def;
  }
  return nullptr;
}

}  // namespace onnx_amp
