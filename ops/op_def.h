// What every op is, from its ops/ops.def row: its class under each mixed policy and the
// inputs that must stay float32 (the converter asks these; policies override them), and
// the facts other layers read instead of keeping op lists of their own.
#pragma once

#include <cstdint>
#include <iterator>
#include <span>
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

// Facts about an op, as a bit set; ops.def names them in its last column.
namespace op_facts {
enum OpFact : uint32_t {
  kNoKernel = 1u << 0,      // the converter paints it; the runtime has no kernel for it
  kTrainable = 1u << 1,     // has a gradient rule (ops/<family>/<family>_grad.cc)
  kSumReduction = 1u << 2,  // adds up the elements it reduces: the result grows with their count
};
}  // namespace op_facts
using op_facts::OpFact;

struct OpPrecisionDef {
  std::string_view name;
  std::string_view domain;  // "" for the default ONNX domain
  PrecisionClass mixed_float16;
  PrecisionClass mixed_bfloat16;
  uint32_t fixed_fp32_inputs;  // inputs kept float32 whatever the policy
};

struct OpFactsDef {
  std::string_view name;
  std::string_view domain;
  uint32_t facts;  // OpFact bits
};

// Looks the op up in ops.def; "ai.onnx" is the default domain. nullptr when unknown.
const OpPrecisionDef* FindOpPrecision(std::string_view domain, std::string_view name);
// The op's OpFact bits; 0 for an op missing from ops.def.
uint32_t OpFacts(std::string_view domain, std::string_view name);
inline bool OpHasFact(std::string_view domain, std::string_view name, OpFact fact) {
  return (OpFacts(domain, name) & fact) != 0;
}
inline bool IsSumReduction(std::string_view domain, std::string_view name) {
  return OpHasFact(domain, name, op_facts::kSumReduction);
}

// The whole table, in ops.def order.
struct OpPrecisionTable {
  const OpPrecisionDef* begin;
  const OpPrecisionDef* end;
};
OpPrecisionTable AllOpPrecisions();

namespace op_def_detail {

inline constexpr OpPrecisionDef kOpPrecisions[] = {
#define ONNX_AMP_OP(name, domain, fp16_class, bf16_class, fixed_inputs, facts) \
  {name, domain, PrecisionClass::fp16_class, PrecisionClass::bf16_class, fixed_inputs},
#include "ops/ops.def"
#undef ONNX_AMP_OP
};

using namespace op_facts;  // the facts column spells the bits unqualified
inline constexpr OpFactsDef kOpFacts[] = {
#define ONNX_AMP_OP(name, domain, fp16_class, bf16_class, fixed_inputs, facts) {name, domain, facts},
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

inline uint32_t OpFacts(std::string_view domain, std::string_view name) {
  domain = CanonicalDomain(domain);
  for (const OpFactsDef& def : op_def_detail::kOpFacts) {
    if (def.name == name && def.domain == domain) return def.facts;
  }
  return 0;
}

// Every op's facts, in ops.def order.
inline std::span<const OpFactsDef> AllOpFacts() { return op_def_detail::kOpFacts; }

}  // namespace onnx_amp
