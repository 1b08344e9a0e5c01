#include "converter/report.h"


#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "converter/plan.h"
#include "runtime/io/file_bytes.h"

namespace onnx_amp {

void AddPlanToReport(const ConversionPlan& plan, ConversionReport& report, bool with_nodes) {
  if (with_nodes) report.nodes.reserve(report.nodes.size() + plan.node_order.size());
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    const onnx::NodeProto* node = plan.node_order[n];
    const NodePlan& node_plan = plan.nodes[n];
    if (node_plan.compute_type != DType::kUndefined) {
      ++report.float_nodes;
      if (IsLowPrecision(node_plan.compute_type)) ++report.converted_nodes;
    }
    if (!with_nodes) continue;
    NodeReport entry;
    entry.graph = plan.graphs[node_plan.graph].path;
    entry.name = node->name();
    entry.op = node->domain().empty() ? node->op_type() : node->domain() + ":" + node->op_type();
    entry.dtype = node_plan.compute_type == DType::kUndefined ? "n/a" : std::string(DTypeName(node_plan.compute_type));
    entry.op_class = std::string(PrecisionClassName(node_plan.node_class.precision_class));
    entry.reason = node_plan.reason;
    report.nodes.push_back(std::move(entry));
  }
  report.unknown_ops = plan.unknown_ops;
}

nlohmann::json OpsetDecisionToJson(const OpsetDecision& decision) {
  nlohmann::json needs = nlohmann::json::array();
  for (const OpsetNeed& need : decision.needs) {
    needs.push_back({{"op", need.op}, {"opset", need.opset}, {"nodes", need.nodes}});
  }
  nlohmann::json json = {{"action", OpsetActionName(decision.action)},
                         {"from", decision.from},
                         {"to", decision.to},
                         {"low_dtype", DTypeName(decision.low_type)},
                         {"needs", needs},
                         {"nodes_below_needed_opset", decision.NodesBelowNeededOpset()},
                         {"summary", DescribeOpsetDecision(decision)}};
  if (!decision.failure.empty()) json["failure"] = decision.failure;
  return json;
}

nlohmann::json ReportToJson(const ConversionReport& report) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeReport& node : report.nodes) {
    nodes.push_back({{"graph", node.graph},
                     {"name", node.name},
                     {"op", node.op},
                     {"dtype", node.dtype},
                     {"class", node.op_class},
                     {"reason", node.reason}});
  }
  nlohmann::json clamped = nlohmann::json::array();
  for (const ClampedTensor& tensor : report.clamped) {
    clamped.push_back({{"name", tensor.name},
                       {"clamped", tensor.clamped},
                       {"worst", tensor.worst},
                       {"flushed_to_zero", tensor.flushed_to_zero}});
  }
  return {{"policy", report.policy},
          {"target", report.target},
          {"hardware", report.hardware},
          {"opset", report.opset},
          {"opset_change", OpsetDecisionToJson(report.opset_decision)},
          {"casts_inserted", report.casts_inserted},
          {"casts_retargeted", report.casts_retargeted},
          {"initializers_converted", report.initializers_converted},
          {"initializers_duplicated", report.initializers_duplicated},
          {"constants_converted", report.constants_converted},
          {"float_nodes", report.float_nodes},
          {"converted_nodes", report.converted_nodes},
          {"percent_converted", report.PercentConverted()},
          {"unknown_ops", report.unknown_ops},
          {"clamped", clamped},
          {"nodes", nodes}};
}

Status WriteReport(const ConversionReport& report, const std::string& path) {
  return WriteWholeFile(path, ReportToJson(report).dump(2) + "\n");
}

}  // namespace onnx_amp
