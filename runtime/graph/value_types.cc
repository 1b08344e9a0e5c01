// Element types (and shapes) of every value in a GraphView: ONNX shape inference on a
// copy of the model, then our own rules for what inference leaves open.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <google/protobuf/arena.h>

#include <exception>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/graph/graph_view_builder.h"
#include "runtime/onnx/inference_guards.h"

namespace onnx_amp {
namespace {

// Larger initializers are handed to inference as typed inputs instead of data: it only
// reads the values of small ones (shapes, axes), and copying big weights costs time.
constexpr int64_t kInferenceInitializerElements = 1024;

int64_t ElementCount(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0 || (dim > 0 && count > std::numeric_limits<int64_t>::max() / dim)) {
      return std::numeric_limits<int64_t>::max();
    }
    count *= dim;
  }
  return count;
}

onnx::ValueInfoProto TypedInput(const onnx::TensorProto& initializer) {
  onnx::ValueInfoProto input;
  input.set_name(initializer.name());
  onnx::TypeProto_Tensor* tensor_type = input.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(initializer.data_type());
  onnx::TensorShapeProto* shape = tensor_type->mutable_shape();
  for (int64_t dim : initializer.dims()) shape->add_dim()->set_dim_value(dim);
  return input;
}

// A domain no schema is registered under: inference skips the nodes moved there.
constexpr char kHiddenDomain[] = "onnx_amp.hidden_from_inference";

// Some ONNX inference functions assume a node that matches its schema and crash on
// others (a Scan without `body`), so nodes that fail schema verification are hidden
// from inference; our own rules type their outputs instead.
void HideUnverifiedNodes(onnx::GraphProto& graph, const OpsetMap& opsets) {
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    for (onnx::AttributeProto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) HideUnverifiedNodes(*attribute.mutable_g(), opsets);
      for (onnx::GraphProto& subgraph : *attribute.mutable_graphs()) HideUnverifiedNodes(subgraph, opsets);
    }
    const std::string domain(CanonicalDomain(node.domain()));
    const auto opset = opsets.find(domain);
    if (opset == opsets.end()) continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), domain);
    if (schema == nullptr) continue;
    try {
      schema->Verify(node);
    } catch (const std::exception&) {
      node.set_domain(kHiddenDomain);
    }
  }
}

// The model as inference needs it, without the data of large main-graph initializers.
// It lives on `arena`: building and freeing a copy of a large graph message by message
// would cost more than the inference itself.
onnx::ModelProto* InferenceCopy(const onnx::ModelProto& model, const OpsetMap& opsets,
                                google::protobuf::Arena& arena) {
  onnx::ModelProto* copy = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  copy->set_ir_version(model.ir_version());
  *copy->mutable_opset_import() = model.opset_import();
  *copy->mutable_functions() = model.functions();
  const onnx::GraphProto& graph = model.graph();
  onnx::GraphProto* target = copy->mutable_graph();
  target->set_name(graph.name());
  *target->mutable_node() = graph.node();
  *target->mutable_output() = graph.output();
  *target->mutable_value_info() = graph.value_info();
  *target->mutable_sparse_initializer() = graph.sparse_initializer();

  std::unordered_map<std::string_view, const onnx::TensorProto*> stripped;
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    const bool external = initializer.data_location() == onnx::TensorProto::EXTERNAL;
    if (external || ElementCount(initializer) > kInferenceInitializerElements) {
      stripped.emplace(initializer.name(), &initializer);
    } else {
      *target->add_initializer() = initializer;
    }
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (stripped.count(input.name()) == 0) *target->add_input() = input;
  }
  for (const auto& [name, initializer] : stripped) *target->add_input() = TypedInput(*initializer);
  HideUnverifiedNodes(*target, opsets);
  return copy;
}

// Runs inference in place; false when it gave up (the declared types are used then).
bool RunShapeInference(onnx::ModelProto& model) {
  if (!CheckTensorsForInference(model).ok()) return false;  // decoding the tensor fails later, by name
  GuardShapeInference();
  try {
    const onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                              /*data_prop_val=*/true);
    onnx::shape_inference::DataValueMap propagated;
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options, &propagated);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

ValueShape ShapeFromProto(const onnx::TensorShapeProto& proto) {
  ValueShape shape;
  for (const onnx::TensorShapeProto_Dimension& dim : proto.dim()) {
    shape.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    shape.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return shape;
}

DType DTypeOrUndefined(int32_t onnx_code) { return DTypeFromOnnx(onnx_code).value_or(DType::kUndefined); }

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

DType ConstantType(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    const std::string& name = attribute.name();
    if (name == "value") return DTypeOrUndefined(attribute.t().data_type());
    if (name == "sparse_value") return DTypeOrUndefined(attribute.sparse_tensor().values().data_type());
    if (name == "value_float" || name == "value_floats") return DType::kFloat32;
    if (name == "value_int" || name == "value_ints") return DType::kInt64;
    if (name == "value_string" || name == "value_strings") return DType::kString;
  }
  return DType::kUndefined;
}

bool IsDefaultDomain(const onnx::NodeProto& node) {
  return IsOnnxDomain(node.domain());
}

}  // namespace

DType GraphViewBuilder::BodyInputType(const GraphView& view, const onnx::NodeProto& owner, int input_position) {
  if (!IsDefaultDomain(owner)) return DType::kUndefined;
  if (owner.op_type() == "Loop") {
    // Body inputs: iteration number, condition, then the loop-carried values, which
    // match the Loop's own inputs from index 2 on.
    if (input_position == 0) return DType::kInt64;
    if (input_position == 1) return DType::kBool;
    if (input_position < owner.input_size()) return view.ValueType(owner.input(input_position));
    return DType::kUndefined;
  }
  if (owner.op_type() == "Scan") {
    // Body inputs match the Scan inputs one to one (after opset 8's sequence_lens).
    const onnx::AttributeProto* body = FindAttribute(owner, "body");
    if (body == nullptr) return DType::kUndefined;
    const int offset = owner.input_size() - body->g().input_size();
    const int node_input = input_position + (offset > 0 ? offset : 0);
    if (node_input < owner.input_size()) return view.ValueType(owner.input(node_input));
  }
  return DType::kUndefined;
}

DType GraphViewBuilder::FallbackOutputType(const GraphView& view, int node_index, int output_index) {
  const onnx::NodeProto& node = view.node(node_index);
  if (IsDefaultDomain(node)) {
    const std::string& op_type = node.op_type();
    if (op_type == "Cast") {
      const onnx::AttributeProto* to = FindAttribute(node, "to");
      return to == nullptr ? DType::kUndefined : DTypeOrUndefined(static_cast<int32_t>(to->i()));
    }
    if (op_type == "CastLike") return node.input_size() > 1 ? view.ValueType(node.input(1)) : DType::kUndefined;
    if (OpProducesInt64(kOnnxDomain, op_type)) return DType::kInt64;
    if (OpProducesBool(kOnnxDomain, op_type)) return DType::kBool;
    if (op_type == "Constant") return ConstantType(node);
    if (op_type == "ConstantOfShape") {
      const onnx::AttributeProto* value = FindAttribute(node, "value");
      return value == nullptr ? DType::kFloat32 : DTypeOrUndefined(value->t().data_type());
    }
    // Control flow: an output takes the type of the matching subgraph output (If: the
    // same index; Loop: after the condition; Scan: the same index).
    const int body_output = op_type == "Loop" ? output_index + 1 : output_index;
    if (op_type == "If" || op_type == "Loop" || op_type == "Scan") {
      for (const GraphView::Subgraph* subgraph : view.SubgraphsOf(node_index)) {
        const onnx::GraphProto& body = subgraph->view->graph();
        if (body_output >= body.output_size()) continue;
        const DType dtype = subgraph->view->ValueType(body.output(body_output).name());
        if (dtype != DType::kUndefined) return dtype;
      }
      return DType::kUndefined;
    }
  }
  // Unknown and custom ops: most are element-wise or keep their data type.
  for (const std::string& input : node.input()) {
    if (input.empty()) continue;
    const DType dtype = view.ValueType(input);
    if (dtype != DType::kUndefined) return dtype;
  }
  return DType::kUndefined;
}

void GraphViewBuilder::AssignGraphTypes(GraphView& view, const onnx::GraphProto& typed_graph,
                                        const onnx::NodeProto* owner) {
  std::unordered_map<std::string_view, const onnx::TypeProto*> inferred;
  inferred.reserve(typed_graph.value_info_size() + typed_graph.input_size() + typed_graph.output_size());
  for (const onnx::ValueInfoProto& info : typed_graph.value_info()) inferred[info.name()] = &info.type();
  for (const onnx::ValueInfoProto& info : typed_graph.input()) inferred[info.name()] = &info.type();
  for (const onnx::ValueInfoProto& info : typed_graph.output()) inferred[info.name()] = &info.type();

  // Values with a type from inference or the model, even a non-tensor one, keep it.
  std::vector<bool> typed(view.values_.size(), false);
  for (size_t i = 0; i < view.values_.size(); ++i) {
    ValueInfo& value = view.values_[i];
    if (value.source == ValueSource::kOuterScope) {
      // The owning node comes after the producers of everything its subgraphs read,
      // so the enclosing scope has typed these already.
      const ValueInfo* definition = view.parent_->LookupValue(value.name);
      value.dtype = definition->dtype;
      value.shape = definition->shape;
      typed[i] = true;
      continue;
    }
    const auto it = inferred.find(value.name);
    if (it == inferred.end()) continue;
    const onnx::TypeProto& type = *it->second;
    if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) continue;
    if (type.has_tensor_type()) {
      if (type.tensor_type().elem_type() == 0) continue;
      value.dtype = DTypeOrUndefined(type.tensor_type().elem_type());
      if (type.tensor_type().has_shape()) value.shape = ShapeFromProto(type.tensor_type().shape());
    }
    typed[i] = true;
  }
  // The data type of an initializer is exact, whatever inference or value_info say.
  for (const onnx::TensorProto& initializer : view.graph_->initializer()) {
    const int index = view.value_index_.at(initializer.name());
    ValueInfo& value = view.values_[index];
    value.dtype = DTypeOrUndefined(initializer.data_type());
    value.shape = ValueShape{{initializer.dims().begin(), initializer.dims().end()},
                             std::vector<std::string>(initializer.dims_size())};
    typed[index] = true;
  }
  for (const onnx::SparseTensorProto& initializer : view.graph_->sparse_initializer()) {
    const int index = view.value_index_.at(initializer.values().name());
    ValueInfo& value = view.values_[index];
    value.dtype = DTypeOrUndefined(initializer.values().data_type());
    value.shape = ValueShape{{initializer.dims().begin(), initializer.dims().end()},
                             std::vector<std::string>(initializer.dims_size())};
    typed[index] = true;
  }
  if (owner != nullptr) {
    for (int position = 0; position < view.graph_->input_size(); ++position) {
      const int index = view.value_index_.at(view.graph_->input(position).name());
      if (typed[index]) continue;
      view.values_[index].dtype = BodyInputType(*view.parent_, *owner, position);
    }
  }

  for (int node_index : view.topological_order_) {
    const std::vector<const GraphView::Subgraph*> subgraphs = view.SubgraphsOf(node_index);
    if (!subgraphs.empty()) {
      const std::vector<NodeSubgraph> typed_subgraphs = NodeSubgraphs(typed_graph.node(node_index));
      ONNX_AMP_ASSERT(typed_subgraphs.size() == subgraphs.size(), "the typed copy holds the same subgraphs");
      for (size_t i = 0; i < subgraphs.size(); ++i) {
        AssignGraphTypes(*subgraphs[i]->view, *typed_subgraphs[i].graph, &view.node(node_index));
      }
    }
    const onnx::NodeProto& node = view.node(node_index);
    for (int slot = 0; slot < node.output_size(); ++slot) {
      if (node.output(slot).empty()) continue;
      const int index = view.value_index_.at(node.output(slot));
      if (typed[index]) continue;
      view.values_[index].dtype = FallbackOutputType(view, node_index, slot);
    }
  }
}

void GraphViewBuilder::AssignTypes(const onnx::ModelProto& model, ModelView& view) {
  google::protobuf::Arena arena;
  onnx::ModelProto* copy = InferenceCopy(model, view.opsets_, arena);
  const bool inferred = RunShapeInference(*copy);
  AssignGraphTypes(*view.main_graph_, inferred ? copy->graph() : model.graph(), nullptr);
}

}  // namespace onnx_amp
