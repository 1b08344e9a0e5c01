#include "tools/onnx-amp/summary_format.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "converter/opset_upgrade.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// "[batch, 784]"; a dimension neither known nor named prints as "?".
std::string ShapeText(const std::optional<ValueShape>& shape) {
  if (!shape) return "[unknown rank]";
  std::string text = "[";
  for (size_t i = 0; i < shape->dims.size(); ++i) {
    if (i > 0) text += ", ";
    if (shape->dims[i] >= 0) {
      text += std::to_string(shape->dims[i]);
    } else {
      text += shape->dim_params[i].empty() ? "?" : shape->dim_params[i];
    }
  }
  return text + "]";
}

// Dimensions are numbers, symbolic names, or null when unknown; null for unknown rank.
nlohmann::ordered_json ShapeJson(const std::optional<ValueShape>& shape) {
  if (!shape) return nullptr;
  nlohmann::ordered_json dims = nlohmann::ordered_json::array();
  for (size_t i = 0; i < shape->dims.size(); ++i) {
    if (shape->dims[i] >= 0) {
      dims.push_back(shape->dims[i]);
    } else if (!shape->dim_params[i].empty()) {
      dims.push_back(shape->dim_params[i]);
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

nlohmann::ordered_json TensorsJson(const std::vector<TensorSummary>& tensors) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TensorSummary& tensor : tensors) {
    list.push_back({{"name", tensor.name}, {"dtype", tensor.dtype}, {"shape", ShapeJson(tensor.shape)}});
  }
  return list;
}

template <typename Map>
nlohmann::ordered_json MapJson(const Map& map) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [key, count] : map) object[key] = count;
  return object;
}

std::string NodeText(const ControlFlowSummary& node) {
  return (node.node.empty() ? "unnamed" : "'" + node.node + "'") + " (" + node.op_type + ")";
}

// Left-aligns names in a column as wide as the longest one.
template <typename Map>
void AppendTable(std::ostringstream& out, const Map& map) {
  size_t width = 0;
  for (const auto& [key, count] : map) width = std::max(width, key.size());
  for (const auto& [key, count] : map) {
    out << "  " << key << std::string(width - key.size() + 2, ' ') << count << "\n";
  }
}

}  // namespace

std::string SummaryText(const std::string& model_path, const ModelSummary& summary) {
  std::ostringstream out;
  out << "Model: " << model_path << "\n";
  out << "  IR version: " << summary.ir_version << "\n";
  if (!summary.producer_name.empty()) {
    out << "  Producer: " << summary.producer_name;
    if (!summary.producer_version.empty()) out << " " << summary.producer_version;
    out << "\n";
  }
  out << "  Opsets:";
  const char* separator = " ";
  for (const auto& [domain, version] : summary.opsets) {
    out << separator << DisplayDomain(domain) << " " << version;
    separator = ", ";
  }
  out << "\n";

  out << "Inputs (" << summary.inputs.size() << "):\n";
  for (const TensorSummary& input : summary.inputs) {
    out << "  " << input.name << ": " << input.dtype << ShapeText(input.shape) << "\n";
  }
  out << "Outputs (" << summary.outputs.size() << "):\n";
  for (const TensorSummary& output : summary.outputs) {
    out << "  " << output.name << ": " << output.dtype << ShapeText(output.shape) << "\n";
  }

  out << "Nodes (" << summary.num_nodes << " in the main graph, by op type):\n";
  AppendTable(out, summary.node_counts);

  int64_t total_parameters = 0;
  int64_t total_bytes = 0;
  for (const auto& [dtype, count] : summary.parameters) total_parameters += count;
  for (const auto& [dtype, bytes] : summary.parameter_bytes) total_bytes += bytes;
  out << "Parameters: " << total_parameters << " in " << summary.num_initializers << " initializers, "
      << total_bytes << " bytes\n";
  size_t width = 0;
  for (const auto& [dtype, count] : summary.parameters) width = std::max(width, dtype.size());
  for (const auto& [dtype, count] : summary.parameters) {
    out << "  " << dtype << std::string(width - dtype.size() + 2, ' ') << count << " elements, "
        << summary.parameter_bytes.at(dtype) << " bytes\n";
  }

  out << "Subgraphs: " << summary.num_subgraphs << "\n";
  for (const ControlFlowSummary& node : summary.control_flow) {
    out << "  " << NodeText(node) << " in " << node.scope << ":";
    for (size_t i = 0; i < node.subgraphs.size(); ++i) {
      const SubgraphSummary& subgraph = node.subgraphs[i];
      out << (i == 0 ? " " : ", ") << subgraph.attribute;
      if (!subgraph.name.empty()) out << " '" << subgraph.name << "'";
      out << " (" << subgraph.num_nodes << " nodes)";
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::ordered_json SummaryJson(const ModelSummary& summary) {
  nlohmann::ordered_json json;
  json["opsets"] = MapJson(summary.opsets);
  json["ir_version"] = summary.ir_version;
  json["producer_name"] = summary.producer_name;
  json["producer_version"] = summary.producer_version;
  json["inputs"] = TensorsJson(summary.inputs);
  json["outputs"] = TensorsJson(summary.outputs);
  json["node_counts"] = MapJson(summary.node_counts);
  json["num_nodes"] = summary.num_nodes;
  json["num_initializers"] = summary.num_initializers;
  json["parameters"] = MapJson(summary.parameters);
  json["parameter_bytes"] = MapJson(summary.parameter_bytes);
  json["subgraphs"] = summary.num_subgraphs;
  nlohmann::ordered_json control_flow = nlohmann::ordered_json::array();
  for (const ControlFlowSummary& node : summary.control_flow) {
    nlohmann::ordered_json subgraphs = nlohmann::ordered_json::array();
    for (const SubgraphSummary& subgraph : node.subgraphs) {
      subgraphs.push_back({{"attribute", subgraph.attribute}, {"name", subgraph.name}, {"num_nodes", subgraph.num_nodes}});
    }
    control_flow.push_back(
        {{"scope", node.scope}, {"node", node.node}, {"op_type", node.op_type}, {"subgraphs", subgraphs}});
  }
  json["control_flow"] = control_flow;
  return json;
}

std::string PrecisionText(const PrecisionSummary& summary) {
  const ConversionReport& report = summary.report;
  std::ostringstream out;
  out << "Precision (policy " << report.policy << ", target " << report.target << ", hardware " << report.hardware
      << "; nothing written):\n";
  out << "  Converted: " << report.converted_nodes << " of " << report.float_nodes << " float nodes ("
      << std::fixed << std::setprecision(1) << report.PercentConverted() << "%)\n";
  const std::string opset = DescribeOpsetDecision(report.opset_decision);
  out << "  Opset: " << (opset.empty() ? std::to_string(report.opset) + " (no op needs a newer one)" : opset) << "\n";
  out << "  Casts inserted: " << report.casts_inserted << "\n";
  out << "  Casts retargeted: " << report.casts_retargeted << "\n";
  size_t name_width = 0;
  size_t op_width = 0;
  size_t dtype_width = 0;
  for (const NodeReport& node : report.nodes) {
    name_width = std::max(name_width, node.name.size());
    op_width = std::max(op_width, node.op.size());
    dtype_width = std::max(dtype_width, node.dtype.size());
  }
  out << "Node dtypes (" << report.nodes.size() << "):\n";
  for (const NodeReport& node : report.nodes) {
    out << "  " << node.name << std::string(name_width - node.name.size() + 2, ' ') << node.op
        << std::string(op_width - node.op.size() + 2, ' ') << node.dtype
        << std::string(dtype_width - node.dtype.size() + 2, ' ') << node.op_class << "  " << node.reason;
    if (node.graph != "main") out << " [" << node.graph << "]";
    out << "\n";
  }
  out << "Clamped initializers: " << report.clamped.size() << "\n";
  for (const ClampedTensor& tensor : report.clamped) {
    out << "  " << tensor.name << ": " << tensor.clamped << " values beyond +-65504 (worst " << tensor.worst << "), "
        << tensor.flushed_to_zero << " flushed to zero\n";
  }
  out << "Unknown ops: " << report.unknown_ops.size() << "\n";
  for (const std::string& op : report.unknown_ops) out << "  " << op << " (kept float32)\n";
  out << "Tensor Core misses (low-precision MatMul/Gemm/Conv dims not a multiple of " << kTensorCoreMultiple
      << "): " << summary.tensor_core_misses.size() << "\n";
  for (const TensorCoreMiss& miss : summary.tensor_core_misses) {
    out << "  " << miss.node << " (" << miss.op << ", " << miss.dtype << "):";
    for (size_t i = 0; i < miss.dims.size(); ++i) {
      const CheckedDim& dim = miss.dims[i];
      out << (i == 0 ? " " : ", ") << dim.name << "=" << (dim.value ? std::to_string(*dim.value) : "unknown");
      if (dim.Misses()) out << " (miss)";
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::ordered_json PrecisionJson(const PrecisionSummary& summary) {
  const ConversionReport& report = summary.report;
  nlohmann::ordered_json json;
  json["policy"] = report.policy;
  json["target"] = report.target;
  json["hardware"] = report.hardware;
  json["opset"] = report.opset;
  json["opset_change"] = nlohmann::ordered_json(OpsetDecisionToJson(report.opset_decision));
  json["casts_inserted"] = report.casts_inserted;
  json["casts_retargeted"] = report.casts_retargeted;
  json["float_nodes"] = report.float_nodes;
  json["converted_nodes"] = report.converted_nodes;
  json["percent_converted"] = report.PercentConverted();
  // The clamp list and the per-node decisions are the converter report's own JSON.
  const nlohmann::json report_json = ReportToJson(report);
  json["clamped"] = nlohmann::ordered_json(report_json["clamped"]);
  json["unknown_ops"] = report.unknown_ops;
  json["nodes"] = nlohmann::ordered_json(report_json["nodes"]);
  nlohmann::ordered_json misses = nlohmann::ordered_json::array();
  for (const TensorCoreMiss& miss : summary.tensor_core_misses) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::array();
    for (const CheckedDim& dim : miss.dims) {
      nlohmann::ordered_json value = nullptr;
      if (dim.value) value = *dim.value;
      dims.push_back({{"name", dim.name}, {"value", value}, {"multiple_of_8", !dim.Misses()}});
    }
    misses.push_back({{"node", miss.node}, {"op", miss.op}, {"dtype", miss.dtype}, {"dims", dims}});
  }
  json["tensor_core"] = misses;
  return json;
}

}  // namespace onnx_amp
