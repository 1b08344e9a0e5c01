// Renders a ModelSummary for `onnx-amp inspect`: readable text, or JSON whose keys match
// the models/<name>.expected.json schema (opsets, ir_version, inputs, outputs,
// node_counts, parameters, parameter_bytes, num_nodes, num_initializers, subgraphs),
// plus producer and control_flow. With --policy, a PrecisionSummary renders as text, or as
// a JSON object (the "precision" key of the summary) with the keys: policy, target,
// hardware, opset, opset_change (as in the conversion report), casts_inserted, casts_retargeted, float_nodes, converted_nodes, percent_converted,
// clamped, unknown_ops, nodes (graph, name, op, dtype, class, reason) and tensor_core
// (node, op, dtype, dims: name, value or null when not static, multiple_of_8).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/onnx-amp/model_summary.h"
#include "tools/onnx-amp/precision_summary.h"

namespace onnx_amp {

std::string SummaryText(const std::string& model_path, const ModelSummary& summary);
nlohmann::ordered_json SummaryJson(const ModelSummary& summary);

std::string PrecisionText(const PrecisionSummary& summary);
nlohmann::ordered_json PrecisionJson(const PrecisionSummary& summary);

}  // namespace onnx_amp
