#include "converter/passes/convert_initializers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "converter/passes/low_tensor.h"
#include "runtime/core/convert.h"

namespace onnx_amp {
namespace {

constexpr uint16_t kFloat16MaxBits = 0x7BFF;

struct Use {
  onnx::NodeProto* node = nullptr;
  NodePlan* plan = nullptr;  // the node's plan, whose value ids follow its inputs
  int input = -1;
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

// The AVX2 clone vectorizes the search for values to clamp or count.
__attribute__((target_clones("avx2", "default"))) void ConvertChunkToLow(const float* in, uint16_t* out,
                                                                         size_t count, DType low,
                                                                         ClampedTensor& record) {
  if (low == DType::kBFloat16) {
    ConvertFloatToBFloat16(in, out, count);
    return;
  }
  ONNX_AMP_ASSERT(low == DType::kFloat16, "ConvertChunkToLow: not a low dtype");
  ConvertFloatToHalf(in, out, count);
  // Finite values beyond the range became inf: clamp them as ConvertTensorToLow does.
  // Such values and flushed ones are rare: a vectorizable test finds the blocks that
  // hold any, and only those are walked value by value.
  constexpr size_t kBlock = 256;
  constexpr int32_t kFloat16MaxMagnitude = 0x477FE000;  // 65504.0f
  constexpr int32_t kInfMagnitude = 0x7F800000;
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t end = std::min(count, begin + kBlock);
    int32_t special = 0;
    for (size_t i = begin; i < end; ++i) {
      int32_t bits = 0;
      std::memcpy(&bits, in + i, sizeof(bits));
      const int32_t magnitude = bits & 0x7FFFFFFF;  // float magnitudes order as int32
      const int32_t half_magnitude = out[i] & 0x7FFF;
      special |= static_cast<int32_t>(magnitude > kFloat16MaxMagnitude && magnitude < kInfMagnitude) |
                 static_cast<int32_t>(half_magnitude == 0 && magnitude != 0);
    }
    if (special == 0) continue;
    for (size_t i = begin; i < end; ++i) {
      const float magnitude = std::fabs(in[i]);
      if (magnitude > kFloat16Max && std::isfinite(magnitude)) {
        if (record.clamped == 0 || magnitude > std::fabs(record.worst)) record.worst = in[i];
        ++record.clamped;
        out[i] = static_cast<uint16_t>((out[i] & 0x8000u) | kFloat16MaxBits);
      } else if ((out[i] & 0x7FFFu) == 0 && magnitude != 0.0f) {
        ++record.flushed_to_zero;
      }
    }
  }
}

Status ConvertInitializers(PassContext& context) {
  ConversionPlan& plan = context.plan;
  ConversionReport& report = context.report;
  const DType low = plan.low_type;
  ValueTable& values = plan.values;
  // Readers of each initializer: uses[use_list[id]] for the initializer with value id `id`.
  std::vector<int> use_list(values.size(), -1);
  std::vector<std::vector<Use>> uses;
  for (const GraphScope& scope : plan.graphs) {
    for (const auto& init : scope.graph->initializer()) {
      const int id = values.Find(init.name());
      if (id < 0 || use_list[id] >= 0) continue;
      use_list[id] = static_cast<int>(uses.size());
      uses.emplace_back();
    }
  }
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    NodePlan& node_plan = plan.nodes[n];
    for (int i = 0; i < static_cast<int>(node_plan.input_values.size()); ++i) {
      const int id = node_plan.input_values[i];
      if (id < 0 || use_list[id] < 0) continue;
      uses[use_list[id]].push_back(
          {const_cast<onnx::NodeProto*>(plan.node_order[n]), &node_plan, i, node_plan.input_types[i]});
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
      const bool external = IsExternalFloat(init);
      if (inputs.count(init.name()) || !(external || CanConvertTensor(init))) continue;
      const int id = values.Find(init.name());
      if (id < 0 || use_list[id] < 0 || uses[use_list[id]].empty()) continue;
      const std::vector<Use>& readers = uses[use_list[id]];
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
        use.plan->input_values[use.input] = copy_id;
      }
      *graph.add_initializer() = std::move(copy);  // invalidates `init`
      ++report.initializers_duplicated;
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
