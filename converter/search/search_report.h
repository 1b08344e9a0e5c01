// The report of convert --auto as JSON (schema below, versioned) and as text.
//
// JSON schema, version 1:
// {
//   "schema": "onnx-amp.auto-convert/1",
//   "passed": bool,
//   "validation_runs": int,     // conversions validated (each over every sample)
//   "rounds": int,              // repaint-and-validate rounds, the last one passing
//   "regions_searched": int,    // painted regions bisected over, summed over rounds
//   "nodes_searched": int,      // nodes bisected over in guilty regions, summed
//   "forced": [{"node": str, "op_type": str, "stage": "range-screen"|"search",
//               "value": str, "magnitude": num, "non_finite": bool, "reason": str}],
//   "validation": <runtime/validate/report_format.h schema> of the returned model
// }
// "magnitude" is max|x| in float32 for range-screen entries and the max abs error of
// the diverging value for search entries (inf is written as the string "inf").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "converter/search/auto_convert.h"
#include "runtime/core/status.h"

namespace onnx_amp {

inline constexpr const char* kAutoConvertSchema = "onnx-amp.auto-convert/1";

nlohmann::json AutoConvertReportToJson(const AutoConvertReport& report);
std::string FormatAutoConvertReport(const AutoConvertReport& report);
// Temporary file, then rename.
Status WriteAutoConvertReport(const AutoConvertReport& report, const std::string& path);

}  // namespace onnx_amp
