// Element types and shapes of every value in a GraphView: the types from the shared
// type inference (runtime/onnx/type_inference.h, with the runtime's additions), the
// shapes from ONNX shape inference on a copy of the model.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <google/protobuf/arena.h>

#include <exception>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "runtime/graph/graph_view_builder.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/inference_guards.h"
#include "runtime/onnx/type_inference.h"

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

// Every view of `view`'s graph and its subgraphs, by graph.
void CollectViews(const GraphView& view, std::unordered_map<const onnx::GraphProto*, const GraphView*>& views) {
  views[&view.graph()] = &view;
  for (const GraphView::Subgraph& subgraph : view.subgraphs()) CollectViews(*subgraph.view, views);
}

}  // namespace

void GraphViewBuilder::AssignGraphTypes(GraphView& view, const onnx::GraphProto& shaped_graph, const ModelTypes& types) {
  std::unordered_map<std::string_view, const onnx::TypeProto*> shaped;
  shaped.reserve(shaped_graph.value_info_size() + shaped_graph.input_size() + shaped_graph.output_size());
  for (const onnx::ValueInfoProto& info : shaped_graph.value_info()) shaped[info.name()] = &info.type();
  for (const onnx::ValueInfoProto& info : shaped_graph.input()) shaped[info.name()] = &info.type();
  for (const onnx::ValueInfoProto& info : shaped_graph.output()) shaped[info.name()] = &info.type();
  const GraphTypes* typed = types.Of(*view.graph_);
  ONNX_AMP_ASSERT(typed != nullptr, "type inference visits every graph of the model");

  for (ValueInfo& value : view.values_) {
    if (value.source == ValueSource::kOuterScope) {
      // The owning node comes after the producers of everything its subgraphs read,
      // so the enclosing scope has typed these already.
      const ValueInfo* definition = view.parent_->LookupValue(value.name);
      value.dtype = definition->dtype;
      value.shape = definition->shape;
      continue;
    }
    value.dtype = typed->Find(value.name).TensorDType();
    const auto it = shaped.find(value.name);
    if (it != shaped.end() && it->second->has_tensor_type() && it->second->tensor_type().has_shape()) {
      value.shape = ShapeFromProto(it->second->tensor_type().shape());
    }
  }
  // The shape of an initializer is its dims, whatever inference or value_info say.
  for (const onnx::TensorProto& initializer : view.graph_->initializer()) {
    view.values_[view.value_index_.at(initializer.name())].shape =
        ValueShape{{initializer.dims().begin(), initializer.dims().end()}, std::vector<std::string>(initializer.dims_size())};
  }
  for (const onnx::SparseTensorProto& initializer : view.graph_->sparse_initializer()) {
    view.values_[view.value_index_.at(initializer.values().name())].shape =
        ValueShape{{initializer.dims().begin(), initializer.dims().end()}, std::vector<std::string>(initializer.dims_size())};
  }
  for (int node_index : view.topological_order_) {
    const std::vector<const GraphView::Subgraph*> subgraphs = view.SubgraphsOf(node_index);
    if (subgraphs.empty()) continue;
    const std::vector<NodeSubgraph> shaped_subgraphs = NodeSubgraphs(shaped_graph.node(node_index));
    ONNX_AMP_ASSERT(shaped_subgraphs.size() == subgraphs.size(), "the inferred copy holds the same subgraphs");
    for (size_t i = 0; i < subgraphs.size(); ++i) {
      AssignGraphTypes(*subgraphs[i]->view, *shaped_subgraphs[i].graph, types);
    }
  }
}

void GraphViewBuilder::AssignTypes(const onnx::ModelProto& model, ModelView& view) {
  std::unordered_map<const onnx::GraphProto*, const GraphView*> views;
  CollectViews(*view.main_graph_, views);
  TypeInferenceOptions options;
  options.assume_newest_default_opset = true;
  options.untyped_outputs_follow_first_input = true;
  options.node_order = [&views](const onnx::GraphProto& graph) -> const std::vector<int>* {
    auto it = views.find(&graph);
    return it == views.end() ? nullptr : &it->second->topological_order();
  };
  const ModelTypes types = InferModelTypes(model, options);
  google::protobuf::Arena arena;
  onnx::ModelProto* copy = InferenceCopy(model, view.opsets_, arena);
  const bool inferred = RunShapeInference(*copy);
  AssignGraphTypes(*view.main_graph_, inferred ? copy->graph() : model.graph(), types);
}

}  // namespace onnx_amp
