#include "converter/passes/convert_initializers.h"

#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/passes/low_tensor.h"

namespace onnx_amp {
namespace {

struct Use {
  onnx::NodeProto* node = nullptr;
  int input = -1;
  int slot = -1;  // the input's entry in ConversionPlan::slot_values
  DType dtype = DType::kUndefined;  // dtype the consumer reads it in
};

bool IsExternalFloat(const onnx::TensorProto& tensor) {
  return tensor.data_type() == onnx::TensorProto::FLOAT && tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

// Gives `tensor` (still in its external file) the low dtype and a transform that
// converts it when written; `record_name` names it in the report.
void StreamToLow(onnx::TensorProto& tensor, DType low, const std::string& record_name, StreamedInitializers& streamed) {
  auto record = std::make_shared<ClampedTensor>();
  record->name = record_name;
  ChunkTransform transform;
  transform.in_element_bytes = sizeof(float);
  transform.out_element_bytes = sizeof(uint16_t);
  transform.convert = [record, low](const void* in, void* out, size_t count) {
    ConvertChunkToLow(static_cast<const float*>(in), static_cast<uint16_t*>(out), count, low, *record);
  };
  streamed.transforms[tensor.name()] = std::move(transform);
  streamed.records.push_back(std::move(record));
  tensor.set_data_type(ToOnnx(low));
}

}  // namespace

Status ConvertInitializers(PassContext& context) {
  ConversionPlan& plan = context.plan;
  ConversionReport& report = context.report;
  const DType low = plan.low_type;
  ValueTable& values = plan.values;
  // The initializers' value ids, graph after graph, and the readers of each: the uses
  // of value id `id`, in node order, are uses[use_begin[id]] to uses[use_begin[id + 1]].
  std::vector<int> ids;
  std::vector<char> initializer(values.size(), 0);
  for (const GraphScope& scope : plan.graphs) {
    const std::span<const int> known = values.InitializerIds(*scope.graph);
    const auto& initializers = scope.graph->initializer();
    for (int k = 0; k < initializers.size(); ++k) {
      const int id = known.size() == static_cast<size_t>(initializers.size()) ? known[k]
                                                                              : values.Find(initializers[k].name());
      ids.push_back(id);
      if (id >= 0) initializer[id] = 1;
    }
  }
  std::vector<int> use_begin(values.size() + 1, 0);
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    for (int id : plan.InputValues(n)) {
      if (id >= 0 && initializer[id]) ++use_begin[id + 1];
    }
  }
  for (size_t id = 0; id < initializer.size(); ++id) use_begin[id + 1] += use_begin[id];
  std::vector<Use> uses(use_begin.back());
  std::vector<int> use_end(use_begin.begin(), use_begin.end() - 1);
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    const std::span<const int> input_values = plan.InputValues(n);
    for (int i = 0; i < static_cast<int>(input_values.size()); ++i) {
      const int id = input_values[i];
      if (id < 0 || !initializer[id]) continue;
      uses[use_end[id]++] = {const_cast<onnx::NodeProto*>(plan.node_order[n]), i, plan.nodes[n].slots + i,
                             plan.InputTypes(n)[i]};
    }
  }
  std::unordered_set<std::string> graph_outputs;
  for (const GraphScope& scope : plan.graphs) {
    for (const auto& output : scope.graph->output()) graph_outputs.insert(output.name());
  }

  const int* next_id = ids.data();
  for (GraphScope& scope : plan.graphs) {
    onnx::GraphProto& graph = *scope.graph;
    std::unordered_set<std::string> inputs;
    for (const auto& input : graph.input()) inputs.insert(input.name());
    const int initializer_count = graph.initializer_size();  // copies are appended
    for (int k = 0; k < initializer_count; ++k) {
      const int id = *next_id++;
      onnx::TensorProto& init = *graph.mutable_initializer(k);
      // An initializer listed as a graph input can be overridden at run time: leave it.
      const bool external = IsExternalFloat(init);
      if (inputs.count(init.name()) || !(external || CanConvertTensor(init))) continue;
      if (id < 0 || use_begin[id] == use_begin[id + 1]) continue;
      const std::span<const Use> readers(uses.data() + use_begin[id], uses.data() + use_begin[id + 1]);
      bool any_low = false;
      bool any_other = graph_outputs.count(init.name()) > 0;
      for (const Use& use : readers) {
        any_low |= use.dtype == low;
        any_other |= use.dtype != low;
      }
      if (!any_low) continue;

      if (!any_other && external) {
        StreamToLow(init, low, init.name(), context.streamed);
        values.set_type(id, low);
        ++report.initializers_converted;
        continue;
      }
      if (!any_other) {
        ONNX_AMP_ASSIGN_OR_RETURN(ClampedTensor record, ConvertTensorToLow(init, low));
        if (record.clamped > 0 || record.flushed_to_zero > 0) report.clamped.push_back(record);
        values.set_type(id, low);
        ++report.initializers_converted;
        continue;
      }
      onnx::TensorProto copy = init;
      copy.set_name(context.names.Take(init.name() + "_amp_" + std::string(DTypeName(low))));
      if (external) {
        StreamToLow(copy, low, init.name(), context.streamed);
      } else {
        ONNX_AMP_ASSIGN_OR_RETURN(ClampedTensor record, ConvertTensorToLow(copy, low));
        record.name = init.name();
        if (record.clamped > 0 || record.flushed_to_zero > 0) report.clamped.push_back(record);
      }
      const int copy_id = values.Set(copy.name(), low);
      for (const Use& use : readers) {
        if (use.dtype != low) continue;
        use.node->set_input(use.input, copy.name());
        plan.slot_values[use.slot] = copy_id;
      }
      *graph.add_initializer() = std::move(copy);  // invalidates `init`
      ++report.initializers_duplicated;
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
