// What `onnx-amp inspect --policy` reports: the converter's decision for every node
// (dtype, class, reason), the Casts and clamped initializers a conversion would produce,
// and the low-precision GEMMs and convolutions whose dimensions miss the Tensor Core
// rule (multiples of 8). The conversion runs in memory only; nothing is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "converter/report.h"
#include "runtime/core/status.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {

// Tensor Cores run float16/bfloat16 GEMMs at full rate when these are multiples of 8.
inline constexpr int64_t kTensorCoreMultiple = 8;

// One dimension the rule checks: "N" and "K" of MatMul/Gemm, "C_in/group" and
// "C_out/group" of Conv; nullopt when the dimension is not static.
struct CheckedDim {
  std::string name;
  std::optional<int64_t> value;

  bool Misses() const { return !value || *value % kTensorCoreMultiple != 0; }
};

// A low-precision MatMul, Gemm or Conv of the main graph with at least one missing dim.
struct TensorCoreMiss {
  std::string node;
  std::string op;
  std::string dtype;
  std::vector<CheckedDim> dims;  // every checked dim, the missing ones included
};

struct PrecisionSummary {
  ConversionReport report;
  std::vector<TensorCoreMiss> tensor_core_misses;
};

// Converts `model` in memory with `options` and checks the shapes of `view` (a view of
// the same model) against the rule. Errors are those of ConvertModel.
Expected<PrecisionSummary> SummarizePrecision(const onnx::ModelProto& model, const ModelView& view,
                                              const ConvertOptions& options);

}  // namespace onnx_amp
