// Renders a ModelSummary for `onnx-amp inspect`: readable text, or JSON whose keys match
// the models/<name>.expected.json schema (opsets, ir_version, inputs, outputs,
// node_counts, parameters, parameter_bytes, num_nodes, num_initializers, subgraphs),
// plus producer and control_flow.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/onnx-amp/model_summary.h"

namespace onnx_amp {

std::string SummaryText(const std::string& model_path, const ModelSummary& summary);
nlohmann::ordered_json SummaryJson(const ModelSummary& summary);

}  // namespace onnx_amp
