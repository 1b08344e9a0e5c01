#include "runtime/validate/range_screen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>

#include <onnx/onnx_pb.h>

#include "runtime/executor/executor.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

void Record(const Tensor& tensor, DType low_type, ValueRangeRecord& record) {
  const double smallest = SmallestSubnormal(low_type);
  const auto visit = [&](double v) {
    if (!std::isfinite(v)) return;
    if (record.finite == 0) record.min = record.max = v;
    ++record.finite;
    record.min = std::min(record.min, v);
    record.max = std::max(record.max, v);
    const double magnitude = std::fabs(v);
    record.max_abs = std::max(record.max_abs, magnitude);
    if (v != 0.0) {
      ++record.nonzero;
      if (magnitude < smallest) ++record.below_subnormal;
    }
  };
  const int64_t count = tensor.num_elements();
  if (tensor.dtype() == DType::kFloat32) {
    const float* data = tensor.data<float>();
    for (int64_t i = 0; i < count; ++i) visit(data[i]);
  } else if (tensor.dtype() == DType::kFloat64) {
    const double* data = tensor.data<double>();
    for (int64_t i = 0; i < count; ++i) visit(data[i]);
  }
}

}  // namespace

std::string DescribeScreenedNode(const ScreenedNode& node, DType low_type) {
  char text[160];
  if (node.problem == RangeProblem::kOverflow) {
    std::snprintf(text, sizeof text, "output '%s' reaches |x| = %.4g in float32, beyond %s's %.6g", node.value.c_str(),
                  node.max_abs, std::string(DTypeName(low_type)).c_str(), LargestFinite(low_type));
  } else {
    std::snprintf(text, sizeof text, "output '%s': %.1f%% of its nonzero values lie below %s's smallest subnormal %.3g",
                  node.value.c_str(), 100.0 * node.underflow_share, std::string(DTypeName(low_type)).c_str(),
                  SmallestSubnormal(low_type));
  }
  return text;
}

Expected<RangeScreenResult> ScreenRanges(const onnx::ModelProto& float32_model, const std::vector<Feeds>& samples,
                                         const RangeScreenOptions& options) {
  if (samples.empty()) return InvalidArgument("range screening needs at least one input sample");
  ExecutorOptions capture_everything;
  capture_everything.capture_all = true;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(float32_model, capture_everything));
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<ModelView> view, BuildModelView(float32_model));
  const GraphView& graph = view->main_graph();

  // Node outputs in topological order, each with its record.
  RangeScreenResult result;
  std::map<std::string, size_t> slot;
  for (int node_index : graph.topological_order()) {
    const onnx::NodeProto& node = graph.node(node_index);
    for (const std::string& output : node.output()) {
      if (output.empty() || slot.count(output)) continue;
      slot[output] = result.values.size();
      result.values.push_back({output, node.name(), node.op_type()});
    }
  }
  for (const Feeds& feeds : samples) {
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, executor->Run(feeds));
    for (const auto& [name, tensor] : run.captured) {
      auto it = slot.find(name);
      if (it != slot.end()) Record(tensor, options.low_type, result.values[it->second]);
    }
    for (const NamedTensor& output : run.outputs) {
      auto it = slot.find(output.name);
      if (it != slot.end() && !run.captured.count(output.name)) Record(output.tensor, options.low_type, result.values[it->second]);
    }
  }

  const double largest = LargestFinite(options.low_type);
  std::string last_node;
  for (const ValueRangeRecord& record : result.values) {
    ScreenedNode screened{record.node, record.op_type, record.value};
    screened.max_abs = record.max_abs;
    screened.underflow_share =
        record.nonzero > 0 ? static_cast<double>(record.below_subnormal) / static_cast<double>(record.nonzero) : 0.0;
    if (record.max_abs > largest) {
      screened.problem = RangeProblem::kOverflow;
    } else if (screened.underflow_share > options.underflow_fraction) {
      screened.problem = RangeProblem::kUnderflow;
    } else {
      continue;
    }
    // A node with several failing outputs is listed once, for its first.
    if (!result.nodes.empty() && result.nodes.back().node == record.node && !record.node.empty()) continue;
    result.nodes.push_back(screened);
  }
  return result;
}

}  // namespace onnx_amp
