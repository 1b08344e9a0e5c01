#include "converter/search/search_report.h"

#include "runtime/io/file_bytes.h"
#include "runtime/validate/report_format.h"

namespace onnx_amp {

nlohmann::json AutoConvertReportToJson(const AutoConvertReport& report) {
  nlohmann::json forced = nlohmann::json::array();
  for (const ForcedNode& node : report.forced) {
    forced.push_back({{"node", node.node},
                      {"op_type", node.op_type},
                      {"stage", std::string(ForcedStageName(node.stage))},
                      {"value", node.value},
                      {"magnitude", JsonNumber(node.magnitude)},
                      {"non_finite", node.non_finite},
                      {"reason", node.reason}});
  }
  return {{"schema", kAutoConvertSchema},
          {"passed", report.passed},
          {"validation_runs", report.validation_runs},
          {"rounds", report.rounds},
          {"regions_searched", report.regions_searched},
          {"nodes_searched", report.nodes_searched},
          {"forced", forced},
          {"validation", ValidationReportToJson(report.validation)}};
}

std::string FormatAutoConvertReport(const AutoConvertReport& report) {
  std::string text = "auto: " + std::to_string(report.forced.size()) + " node(s) forced to float32 after " +
                     std::to_string(report.validation_runs) + " validation run(s), " + std::to_string(report.rounds) +
                     " round(s); " + (report.passed ? "every sample validates" : "validation still fails") + "\n";
  for (const ForcedNode& node : report.forced) {
    text += "  " + node.node + " (" + node.op_type + "): " + node.reason + "\n";
  }
  return text;
}

Status WriteAutoConvertReport(const AutoConvertReport& report, const std::string& path) {
  return WriteWholeFile(path, AutoConvertReportToJson(report).dump(2) + "\n");
}

}  // namespace onnx_amp
