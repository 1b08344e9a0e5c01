#include "converter/passes/convert_initializers.h"

#include <unordered_map>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "converter/passes/low_tensor.h"

namespace onnx_amp {
namespace {

struct Use {
  onnx::NodeProto* node = nullptr;
  int input = -1;
  DType dtype = DType::kUndefined;  // dtype the consumer reads it in
};

}  // namespace

Status ConvertInitializers(ConversionPlan& plan, UniqueNames& names, ConversionReport& report) {
  const DType low = plan.low_type;
  std::unordered_map<std::string, std::vector<Use>> uses;
  for (const onnx::NodeProto* node : plan.node_order) {
    const NodePlan& node_plan = plan.nodes.at(node);
    for (int i = 0; i < node->input_size(); ++i) {
      if (node->input(i).empty()) continue;
      uses[node->input(i)].push_back({const_cast<onnx::NodeProto*>(node), i, node_plan.input_types[i]});
    }
  }
  std::unordered_set<std::string> graph_outputs;
  for (const GraphScope& scope : plan.graphs) {
    for (const auto& output : scope.graph->output()) graph_outputs.insert(output.name());
  }

  for (GraphScope& scope : plan.graphs) {
    onnx::GraphProto& graph = *scope.graph;
    std::unordered_set<std::string> inputs;
    for (const auto& input : graph.input()) inputs.insert(input.name());
    const int initializer_count = graph.initializer_size();  // copies are appended
    for (int k = 0; k < initializer_count; ++k) {
      onnx::TensorProto& init = *graph.mutable_initializer(k);
      // An initializer listed as a graph input can be overridden at run time: leave it.
      if (inputs.count(init.name()) || !CanConvertTensor(init)) continue;
      auto it = uses.find(init.name());
      if (it == uses.end()) continue;
      bool any_low = false;
      bool any_other = graph_outputs.count(init.name()) > 0;
      for (const Use& use : it->second) {
        any_low |= use.dtype == low;
        any_other |= use.dtype != low;
      }
      if (!any_low) continue;

      if (!any_other) {
        ONNX_AMP_ASSIGN_OR_RETURN(ClampedTensor record, ConvertTensorToLow(init, low));
        if (record.clamped > 0 || record.flushed_to_zero > 0) report.clamped.push_back(record);
        plan.value_types[init.name()] = low;
        ++report.initializers_converted;
        continue;
      }
      onnx::TensorProto copy = init;
      copy.set_name(names.Take(init.name() + "_amp_" + std::string(DTypeName(low))));
      ONNX_AMP_ASSIGN_OR_RETURN(ClampedTensor record, ConvertTensorToLow(copy, low));
      record.name = init.name();
      if (record.clamped > 0 || record.flushed_to_zero > 0) report.clamped.push_back(record);
      for (const Use& use : it->second) {
        if (use.dtype == low) use.node->set_input(use.input, copy.name());
      }
      plan.value_types[copy.name()] = low;
      plan.original_types[copy.name()] = DType::kFloat32;
      *graph.add_initializer() = std::move(copy);  // invalidates `init`
      ++report.initializers_duplicated;
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
