// The validation report as JSON (for tools; schema below, versioned) and as text (for
// people).
//
// JSON schema, version 1:
// {
//   "schema": "onnx-amp.validation/1",
//   "passed": bool,                      // every output within tolerance on every sample
//   "samples": int,
//   "outputs": [Tensor],                 // graph outputs, declaration order
//   "intermediates": [Tensor],           // with --per-node, topological order
//   "first_divergence": null | {
//       "node": str, "op_type": str, "dtype": str, "value": str, "non_finite": bool,
//       "sample": int,
//       "inputs": [{"name": str, "max_abs_error": num|null, "rel_l2_error": num|null,
//                   "reference_range": [num, num]|null, "mixed_range": [num, num]|null}]
//   }
// }
// Tensor = {
//   "name": str, "producer": str, "op_type": str,
//   "reference_dtype": str, "mixed_dtype": str, "passed": bool,
//   "rtol": num, "atol": num, "worst_sample": int,
//   "count": int, "violations": int, "worst_index": int,
//   "max_abs_error": num, "max_rel_error": num, "mean_rel_error": num,
//   "rel_l2_error": num, "cosine_similarity": num,
//   "reference_non_finite": int, "mixed_non_finite": int,
//   "reference_max_abs": num, "mixed_max_abs": num, "float16_headroom": num,
//   "reference_range": [num, num], "mixed_range": [num, num],
//   "top1_agreement": num|null, "top5_agreement": num|null
// }
// Non-finite numbers (an infinite headroom, an inf error) are written as strings
// "inf", "-inf" and "nan", since JSON has no such numbers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/validate/validator.h"

namespace onnx_amp {

inline constexpr const char* kValidationSchema = "onnx-amp.validation/1";

// `value` as a JSON number, or as "inf", "-inf" or "nan" (JSON has no such numbers);
// every report the tools write spells numbers this way.
nlohmann::json JsonNumber(double value);

nlohmann::json ValidationReportToJson(const ValidationReport& report);
std::string FormatValidationReport(const ValidationReport& report);
// The one-line summary of a failed validation: the first failing output and the first
// divergence.
std::string SummarizeFailure(const ValidationReport& report);
// Writes the JSON report (temporary file, then rename).
Status WriteValidationReport(const ValidationReport& report, const std::string& path);

}  // namespace onnx_amp
