#include "tools/onnx-amp/summary_format.h"

#include <algorithm>
#include <sstream>

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
    out << separator << (domain.empty() ? "ai.onnx" : domain) << " " << version;
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

}  // namespace onnx_amp
