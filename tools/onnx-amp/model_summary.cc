#include "tools/onnx-amp/model_summary.h"

#include <onnx/onnx_pb.h>

#include <cctype>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// ONNX's spelling of an element type, also for codes DType does not cover (float8, int4).
std::string OnnxTypeName(int32_t code) {
  if (const std::optional<DType> dtype = DTypeFromOnnx(code)) return std::string(DTypeName(*dtype));
  if (!onnx::TensorProto_DataType_IsValid(code)) return "type" + std::to_string(code);
  std::string name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Bytes the tensor's elements take in memory; strings count their characters.
int64_t TensorBytes(const onnx::TensorProto& tensor, int64_t elements) {
  if (tensor.data_type() == onnx::TensorProto::STRING) {
    int64_t bytes = 0;
    for (const std::string& text : tensor.string_data()) bytes += static_cast<int64_t>(text.size());
    return bytes;
  }
  if (const std::optional<DType> dtype = DTypeFromOnnx(tensor.data_type())) {
    return elements * static_cast<int64_t>(DTypeSize(*dtype));
  }
  switch (tensor.data_type()) {
    case onnx::TensorProto::UINT4:
    case onnx::TensorProto::INT4:
    case onnx::TensorProto::FLOAT4E2M1:
      return (elements + 1) / 2;  // two elements per byte
    default:
      return elements;  // the float8 variants
  }
}

// Far above any real model, and low enough that byte counts and sums cannot overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

Expected<int64_t> ElementCount(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0 || (dim > 0 && count > kMaxElements / dim)) {
      return InvalidModel("initializer '" + tensor.name() + "' has invalid dimensions");
    }
    count *= dim;
  }
  return count;
}

TensorSummary SummarizeTensor(const ValueInfo& value) {
  return TensorSummary{value.name, std::string(DTypeName(value.dtype)), value.shape};
}

void SummarizeSubgraphs(const GraphView& graph, ModelSummary& summary) {
  // Depth first, so that a nested node follows the node that owns it; entries are
  // addressed by position because the recursion appends to the vector.
  size_t current = 0;
  int current_node = -1;
  for (const GraphView::Subgraph& subgraph : graph.subgraphs()) {
    if (subgraph.node != current_node) {
      const onnx::NodeProto& node = graph.node(subgraph.node);
      summary.control_flow.push_back({graph.scope_name(), node.name(), node.op_type(), {}});
      current = summary.control_flow.size() - 1;
      current_node = subgraph.node;
    }
    summary.control_flow[current].subgraphs.push_back(
        {subgraph.attribute, subgraph.view->graph().name(), subgraph.view->num_nodes()});
    ++summary.num_subgraphs;
    SummarizeSubgraphs(*subgraph.view, summary);
  }
}

}  // namespace

Expected<ModelSummary> SummarizeModel(const ModelView& view) {
  const onnx::ModelProto& model = view.model();
  const GraphView& main = view.main_graph();
  ModelSummary summary;
  summary.opsets = view.opsets();
  summary.ir_version = model.ir_version();
  summary.producer_name = model.producer_name();
  summary.producer_version = model.producer_version();

  for (const onnx::ValueInfoProto& input : main.graph().input()) {
    const ValueInfo* value = main.FindValue(input.name());
    if (value->source == ValueSource::kGraphInput) summary.inputs.push_back(SummarizeTensor(*value));
  }
  for (const onnx::ValueInfoProto& output : main.graph().output()) {
    summary.outputs.push_back(SummarizeTensor(*main.FindValue(output.name())));
  }

  for (const onnx::NodeProto& node : main.graph().node()) {
    const bool default_domain = IsOnnxDomain(node.domain());
    ++summary.node_counts[default_domain ? node.op_type() : node.domain() + ":" + node.op_type()];
  }
  summary.num_nodes = main.num_nodes();

  int64_t total_elements = 0;
  for (const onnx::TensorProto& initializer : main.graph().initializer()) {
    ONNX_AMP_ASSIGN_OR_RETURN(const int64_t elements, ElementCount(initializer));
    total_elements += elements;
    if (total_elements > kMaxElements) return InvalidModel("the initializers hold more than 2^48 elements");
    const std::string dtype = OnnxTypeName(initializer.data_type());
    summary.parameters[dtype] += elements;
    summary.parameter_bytes[dtype] += TensorBytes(initializer, elements);
  }
  summary.num_initializers = main.graph().initializer_size();

  SummarizeSubgraphs(main, summary);
  return summary;
}

}  // namespace onnx_amp
