// ConversionReport: what the converter decided and did, as machine-readable JSON:
// every node's dtype and the reason, the Cast count, every clamped initializer or
// constant, the share of float nodes converted, the unknown ops, and how the output
// opset was settled ("opset_change": action, from, to, low_dtype, needs: op, opset,
// nodes; nodes_below_needed_opset; failure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "converter/opset_upgrade.h"
#include "runtime/core/status.h"

namespace onnx_amp {

struct ConversionPlan;

// A float32 tensor whose float16 conversion changed values beyond rounding.
struct ClampedTensor {
  std::string name;
  int64_t clamped = 0;          // finite values beyond +-65504 set to +-65504
  double worst = 0.0;           // the clamped value of largest magnitude
  int64_t flushed_to_zero = 0;  // non-zero values below half the smallest subnormal
};

struct NodeReport {
  std::string graph;   // "main", "main/loop.body", ...
  std::string name;
  std::string op;
  std::string dtype;   // "float16", "bfloat16", "float" or "n/a" (no float32 tensors)
  std::string op_class;
  std::string reason;
};

struct ConversionReport {
  std::string policy;
  std::string target;
  std::string hardware;  // the target hardware the policy assumed (TargetHardwareName)
  int64_t opset = 0;              // the output's default-domain opset
  OpsetDecision opset_decision;   // how it was settled, and the ops that needed a newer one
  std::vector<NodeReport> nodes;
  int64_t casts_inserted = 0;
  int64_t casts_retargeted = 0;
  int64_t initializers_converted = 0;
  int64_t initializers_duplicated = 0;
  int64_t constants_converted = 0;
  std::vector<ClampedTensor> clamped;
  int64_t float_nodes = 0;      // nodes with float32 tensors in the input model
  int64_t converted_nodes = 0;  // of those, nodes that compute in the low dtype
  std::vector<std::string> unknown_ops;

  double PercentConverted() const { return float_nodes == 0 ? 0.0 : 100.0 * converted_nodes / float_nodes; }
};

// Fills float_nodes, converted_nodes, unknown_ops and, with `with_nodes`, nodes from the plan.
void AddPlanToReport(const ConversionPlan& plan, ConversionReport& report, bool with_nodes = true);

nlohmann::json ReportToJson(const ConversionReport& report);
// The "opset_change" object of the report.
nlohmann::json OpsetDecisionToJson(const OpsetDecision& decision);
// Writes the JSON report to `path` atomically (runtime/io/file_bytes.h).
Status WriteReport(const ConversionReport& report, const std::string& path);

}  // namespace onnx_amp
