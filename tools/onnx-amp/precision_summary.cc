#include "tools/onnx-amp/precision_summary.h"

#include <string_view>
#include <utility>

#include "runtime/core/dtype.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name && attribute.type() == onnx::AttributeProto::INT) return attribute.i();
  }
  return fallback;
}

// The static dims of input `index` of `node`; nullptr when its rank is unknown.
const ValueShape* InputShape(const GraphView& graph, const onnx::NodeProto& node, int index) {
  if (index >= node.input_size() || node.input(index).empty()) return nullptr;
  const ValueInfo* value = graph.LookupValue(node.input(index));
  return value != nullptr && value->shape ? &*value->shape : nullptr;
}

// Dim `axis` of `shape` counted from the end when negative; nullopt when absent or not static.
std::optional<int64_t> StaticDim(const ValueShape* shape, int64_t axis) {
  if (shape == nullptr) return std::nullopt;
  const auto rank = static_cast<int64_t>(shape->dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || shape->dims[axis] < 0) return std::nullopt;
  return shape->dims[axis];
}

// MatMul: A [..., M, K] x B [..., K, N]; a 1-D B has no N (a matrix-vector product).
std::vector<CheckedDim> MatMulDims(const GraphView& graph, const onnx::NodeProto& node) {
  const ValueShape* b = InputShape(graph, node, 1);
  std::vector<CheckedDim> dims;
  if (b != nullptr && b->dims.size() == 1) return {{"K", StaticDim(b, 0)}};
  dims.push_back({"N", StaticDim(b, -1)});
  std::optional<int64_t> k = StaticDim(b, -2);
  if (!k) k = StaticDim(InputShape(graph, node, 0), -1);
  dims.push_back({"K", k});
  return dims;
}

// Gemm: op(A) [M, K] x op(B) [K, N], op transposing when transA/transB is set.
std::vector<CheckedDim> GemmDims(const GraphView& graph, const onnx::NodeProto& node) {
  const ValueShape* a = InputShape(graph, node, 0);
  const ValueShape* b = InputShape(graph, node, 1);
  const bool trans_a = IntAttribute(node, "transA", 0) != 0;
  const bool trans_b = IntAttribute(node, "transB", 0) != 0;
  std::optional<int64_t> k = StaticDim(b, trans_b ? 1 : 0);
  if (!k) k = StaticDim(a, trans_a ? 0 : 1);
  return {{"N", StaticDim(b, trans_b ? 0 : 1)}, {"K", k}};
}

// Conv: W [C_out, C_in/group, kernel...], checked per group.
std::vector<CheckedDim> ConvDims(const GraphView& graph, const onnx::NodeProto& node) {
  const int64_t group = IntAttribute(node, "group", 1);
  const ValueShape* w = InputShape(graph, node, 1);
  std::optional<int64_t> c_in = StaticDim(w, 1);
  if (!c_in) {
    const std::optional<int64_t> x_channels = StaticDim(InputShape(graph, node, 0), 1);
    if (x_channels && group > 0) c_in = *x_channels / group;
  }
  std::optional<int64_t> c_out = StaticDim(w, 0);
  if (c_out && group > 0) c_out = *c_out / group;
  return {{"C_in/group", c_in}, {"C_out/group", c_out}};
}

bool IsTensorCoreOp(std::string_view op) { return op == "MatMul" || op == "Gemm" || op == "Conv"; }

// The op of a report entry ("MatMul", "ai.onnx:MatMul", "com.microsoft:FusedMatMul")
// when it is in the default domain; "" otherwise.
std::string_view DefaultDomainOp(std::string_view op) {
  const size_t colon = op.find(':');
  if (colon == std::string_view::npos) return op;
  return IsOnnxDomain(op.substr(0, colon)) ? op.substr(colon + 1) : std::string_view();
}

}  // namespace

Expected<PrecisionSummary> SummarizePrecision(const onnx::ModelProto& model, const ModelView& view,
                                              const ConvertOptions& options) {
  ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult result, ConvertModel(model, options));
  PrecisionSummary summary;
  summary.report = std::move(result.report);

  // The report lists the main graph's nodes first, in file order (converter/plan.h). An
  // opset change (converter/opset_upgrade.h) can insert nodes, an adapter's Constant, but
  // keeps every MatMul, Gemm and Conv in order: the k-th of them in `view` is the k-th
  // in the report.
  std::vector<const NodeReport*> entries;
  for (const NodeReport& entry : summary.report.nodes) {
    if (entry.graph == "main" && IsTensorCoreOp(DefaultDomainOp(entry.op))) entries.push_back(&entry);
  }
  const GraphView& graph = view.main_graph();
  size_t next = 0;
  for (int index = 0; index < graph.num_nodes(); ++index) {
    const onnx::NodeProto& node = graph.node(index);
    if (!IsOnnxDomain(node.domain()) || !IsTensorCoreOp(node.op_type())) continue;
    ONNX_AMP_ASSERT(next < entries.size() && entries[next]->name == node.name(),
                    "the conversion report lacks a main-graph MatMul, Gemm or Conv");
    const NodeReport& entry = *entries[next++];
    if (entry.dtype != DTypeName(DType::kFloat16) && entry.dtype != DTypeName(DType::kBFloat16)) continue;
    std::vector<CheckedDim> dims;
    if (node.op_type() == "MatMul") {
      dims = MatMulDims(graph, node);
    } else if (node.op_type() == "Gemm") {
      dims = GemmDims(graph, node);
    } else {
      dims = ConvDims(graph, node);
    }
    bool misses = false;
    for (const CheckedDim& dim : dims) misses = misses || dim.Misses();
    if (misses) summary.tensor_core_misses.push_back({node.name(), node.op_type(), entry.dtype, std::move(dims)});
  }
  return summary;
}

}  // namespace onnx_amp
