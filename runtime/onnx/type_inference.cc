#include "runtime/onnx/type_inference.h"

#include <string>
#include <unordered_map>
#include <utility>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/function_call.h"
#include "runtime/onnx/node_type_rules.h"

namespace onnx_amp {
namespace {

const onnx::GraphProto* Subgraph(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name && attribute.has_g()) return &attribute.g();
  }
  return nullptr;
}

std::string NodeLabel(const onnx::NodeProto& node) {
  return "node '" + (node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?")) : node.name()) +
         "' (" + node.op_type() + ")";
}

class TypeWalker {
 public:
  TypeWalker(const onnx::ModelProto& model, const TypeInferenceOptions& options, bool check, const NodeFilter* filter)
      : model_(model), options_(options), check_(check), filter_(filter) {
    for (const auto& opset : model.opset_import()) opsets_[std::string(CanonicalDomain(opset.domain()))] = opset.version();
    if (opsets_.empty()) opsets_[""] = 1;  // IR version < 3: the default domain at opset 1
    if (options.assume_newest_default_opset && !opsets_.count("")) {
      opsets_[""] = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
    }
  }

  Status Run() { return VisitGraph(model_.graph(), -1, {}, "main", nullptr); }
  ModelTypes Take() { return std::move(types_); }

 private:
  // Types the values of `graph`; `provided` are the types its owner passes to its
  // inputs (a Loop's or Scan's body), used where the graph declares none.
  Status VisitGraph(const onnx::GraphProto& graph, int parent, std::span<const ValueType> provided,
                    const std::string& path, int* index) {
    const int g = static_cast<int>(types_.graphs.size());
    if (index != nullptr) *index = g;
    types_.graphs.push_back({&graph, parent, {}});
    paths_.push_back(path);
    types_.graphs[g].values.reserve(graph.input_size() + graph.initializer_size() + 2 * graph.node_size());
    NameMap<ValueType> declared;
    for (const auto& info : graph.value_info()) AddDeclared(info, declared);
    for (const auto& info : graph.output()) AddDeclared(info, declared);

    for (int k = 0; k < graph.input_size(); ++k) {
      const onnx::ValueInfoProto& input = graph.input(k);
      ValueType type = ValueTypeOf(input.type());
      const ValueType given = k < static_cast<int>(provided.size()) ? provided[k] : ValueType{};
      if (check_ && type.known() && given.known() && type != given) {
        return Fail(g, nullptr, "body input '" + input.name() + "' is declared " + TypeString(type) +
                                    " but its node passes " + TypeString(given));
      }
      if (!type.known()) type = given;
      ONNX_AMP_RETURN_IF_ERROR(Define(g, input.name(), type, nullptr));
    }
    types_.graphs[g].initializers.reserve(graph.initializer_size());
    for (const auto& tensor : graph.initializer()) {
      GraphValue& value = Entry(g, tensor.name());
      value.type = ValueType::Tensor(tensor.data_type());
      types_.graphs[g].initializers.push_back(value.id);
    }
    for (const auto& sparse : graph.sparse_initializer()) {
      Entry(g, sparse.values().name()).type = ValueType::Tensor(sparse.values().data_type());
    }
    const std::vector<int>* order = options_.node_order ? options_.node_order(graph) : nullptr;
    for (int n = 0; n < graph.node_size(); ++n) {
      ONNX_AMP_RETURN_IF_ERROR(VisitNode(graph.node(order != nullptr ? (*order)[n] : n), g, declared));
    }
    if (!check_) return Status::Ok();
    for (const auto& output : graph.output()) {
      bool found = false;
      const ValueType type = Lookup(g, output.name(), &found);
      if (!found) return Fail(g, nullptr, "graph output '" + output.name() + "' is defined nowhere");
      const ValueType wanted = ValueTypeOf(output.type());
      if (wanted.known() && type.known() && wanted != type) {
        return Fail(g, nullptr, "graph output '" + output.name() + "' is declared " + TypeString(wanted) +
                                    " but computed as " + TypeString(type));
      }
    }
    return Status::Ok();
  }

  static void AddDeclared(const onnx::ValueInfoProto& info, NameMap<ValueType>& declared) {
    const ValueType type = ValueTypeOf(info.type());
    if (type.known()) declared.try_emplace(info.name()).first->second = type;
  }

  Status VisitNode(const onnx::NodeProto& node, int g, const NameMap<ValueType>& declared) {
    // Where this node's value ids go (an index: the bodies' nodes append to the vector).
    int ids = -1;
    if (options_.record_node_values) {
      ids = static_cast<int>(types_.node_value_ids.size());
      types_.nodes.push_back({&node, ids});
      types_.node_value_ids.resize(ids + node.input_size() + node.output_size(), -1);
    }
    std::vector<ValueType> inputs(node.input_size());
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;
      bool found = false;
      inputs[i] = Lookup(g, node.input(i), &found, ids < 0 ? nullptr : &types_.node_value_ids[ids + i]);
      if (check_ && !found) {
        return Fail(g, &node, "reads '" + node.input(i) + "', which nothing before it in this graph or an "
                                                         "enclosing one defines");
      }
    }
    std::vector<ValueType> outputs(node.output_size());
    const onnx::OpSchema* schema = nullptr;
    const bool control_flow = IsOnnxDomain(node.domain()) && (node.op_type() == "If" || node.op_type() == "Loop" ||
                                                              node.op_type() == "Scan" || node.op_type() == "SequenceMap");
    if (control_flow) {
      ONNX_AMP_RETURN_IF_ERROR(ControlFlowTypes(node, g, inputs, outputs));
    } else {
      ONNX_AMP_RETURN_IF_ERROR(VisitSubgraphs(node, g, {}, nullptr));
      schema = SchemaFor(node);
      if (schema != nullptr) {
        NodeTypes typed = InferNodeTypes(node, schema, inputs);
        if (check_ && !typed.problem.empty() && Selected(node, inputs, typed.outputs)) {
          return Fail(g, &node, typed.problem);
        }
        if (typed.constraint_broken && types_.rejection.empty()) {
          types_.rejection = Fail(g, &node, typed.problem).message();
        }
        outputs = std::move(typed.outputs);
      } else if (const onnx::FunctionProto* function = FindModelFunction(model_, node)) {
        outputs = FunctionCallTypes(model_, *function, node, inputs);
      }
      if (options_.untyped_outputs_follow_first_input) FollowFirstInput(node, inputs, outputs);
    }
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& name = node.output(o);
      if (name.empty()) continue;
      auto it = declared.find(name);
      if (it != declared.end()) {
        if (check_ && outputs[o].known() && outputs[o] != it->second) {
          return Fail(g, &node, "output '" + name + "' is declared " + TypeString(it->second) + " but computed as " +
                                    TypeString(outputs[o]));
        }
        outputs[o] = it->second;
      }
      int* id = ids < 0 ? nullptr : &types_.node_value_ids[ids + node.input_size() + o];
      ONNX_AMP_RETURN_IF_ERROR(Define(g, name, outputs[o], &node, id));
    }
    if (check_ && schema != nullptr && Selected(node, inputs, outputs)) {
      const std::string problem = CheckTypeConstraints(node, *schema, inputs, outputs);
      if (!problem.empty()) return Fail(g, &node, problem);
    }
    return Status::Ok();
  }

  static void FollowFirstInput(const onnx::NodeProto& node, std::span<const ValueType> inputs,
                               std::vector<ValueType>& outputs) {
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty() || !inputs[i].known()) continue;
      for (ValueType& output : outputs) {
        if (!output.known()) output = inputs[i];
      }
      return;
    }
  }

  bool Selected(const onnx::NodeProto& node, std::span<const ValueType> inputs, std::span<const ValueType> outputs) const {
    return filter_ == nullptr || !*filter_ || (*filter_)(node, inputs, outputs);
  }

  // If -> its branches' outputs; Loop, Scan and SequenceMap -> their body's outputs, the
  // body's inputs typed from the node's inputs where it declares none.
  Status ControlFlowTypes(const onnx::NodeProto& node, int g, std::span<const ValueType> inputs,
                          std::vector<ValueType>& outputs) {
    std::vector<ValueType> provided;
    // Loop: body(iteration, condition, carried...) -> (condition, carried..., scan outputs...).
    // Scan: body(states..., scan slices...) -> (states..., scan output slices...), after
    // opset 8's sequence_lens input.
    const onnx::GraphProto* body = Subgraph(node, "body");
    if (node.op_type() == "Loop") {
      provided = {ValueType::Tensor(DType::kInt64), ValueType::Tensor(DType::kBool)};
      if (inputs.size() > 2) provided.insert(provided.end(), inputs.begin() + 2, inputs.end());
    } else if (node.op_type() == "Scan" && body != nullptr) {
      const int offset = std::max(0, static_cast<int>(inputs.size()) - body->input_size());
      provided.assign(inputs.begin() + offset, inputs.end());
    } else if (node.op_type() == "SequenceMap") {  // body(elements of the sequences, tensors) -> elements
      for (const ValueType& input : inputs) {
        provided.push_back(input.kind == ValueKind::kSequence ? ValueType::Tensor(input.elem) : input);
      }
    }
    std::unordered_map<std::string_view, int> index;
    ONNX_AMP_RETURN_IF_ERROR(VisitSubgraphs(node, g, provided, &index));
    if (node.op_type() == "If") {
      const onnx::GraphProto* then_branch = Subgraph(node, "then_branch");
      const onnx::GraphProto* else_branch = Subgraph(node, "else_branch");
      if (then_branch == nullptr || else_branch == nullptr) return Status::Ok();
      for (int k = 0; k < node.output_size() && k < then_branch->output_size(); ++k) {
        const ValueType then_type = types_.Lookup(index.at("then_branch"), then_branch->output(k).name());
        const ValueType else_type = k < else_branch->output_size()
                                        ? types_.Lookup(index.at("else_branch"), else_branch->output(k).name())
                                        : ValueType{};
        if (then_type.known() && else_type.known() && then_type != else_type) {
          if (check_) return Fail(g, &node, "its branches give output " + std::to_string(k) + " different types");
          outputs.assign(node.output_size(), ValueType{});  // ONNX's inference rejects the node
          return Status::Ok();
        }
        outputs[k] = then_type;
      }
      return Status::Ok();
    }
    if (body == nullptr) return Status::Ok();
    const int first_output = node.op_type() == "Loop" ? 1 : 0;  // after Loop's condition
    for (int k = 0; k < node.output_size() && first_output + k < body->output_size(); ++k) {
      // A scan output stacks the body's tensors: the element type carries over.
      outputs[k] = types_.Lookup(index.at("body"), body->output(first_output + k).name());
      if (node.op_type() == "SequenceMap" && outputs[k].kind == ValueKind::kTensor) {
        outputs[k].kind = ValueKind::kSequence;
      }
    }
    return Status::Ok();
  }

  // Types the graphs `node` holds, in attribute order; `provided` goes to the inputs of
  // a graph named "body". `index` (when given) receives each single graph's entry.
  Status VisitSubgraphs(const onnx::NodeProto& node, int g, std::span<const ValueType> provided,
                        std::unordered_map<std::string_view, int>* index) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      const std::string path = paths_[g] + "/" + (node.name().empty() ? node.op_type() : node.name()) + "." +
                               attribute.name();
      if (attribute.has_g()) {
        int entry = -1;
        const std::span<const ValueType> given = attribute.name() == "body" ? provided : std::span<const ValueType>();
        ONNX_AMP_RETURN_IF_ERROR(VisitGraph(attribute.g(), g, given, path, &entry));
        if (index != nullptr) (*index)[attribute.name()] = entry;
      }
      for (int k = 0; k < attribute.graphs_size(); ++k) {
        ONNX_AMP_RETURN_IF_ERROR(
            VisitGraph(attribute.graphs(k), g, {}, path + "[" + std::to_string(k) + "]", nullptr));
      }
    }
    return Status::Ok();
  }

  // The type of `name` as graph `g` sees it; `id` (when given) receives its id.
  ValueType Lookup(int g, std::string_view name, bool* found, int* id = nullptr) const {
    for (int scope = g; scope >= 0; scope = types_.graphs[scope].parent) {
      const auto& values = types_.graphs[scope].values;
      auto it = values.find(name);
      if (it != values.end()) {
        *found = true;
        if (id != nullptr) *id = it->second.id;
        return it->second.type;
      }
    }
    *found = false;
    return {};
  }

  // The entry of `name` in graph `g`, with a new id when new.
  GraphValue& Entry(int g, std::string_view name) {
    auto [it, inserted] = types_.graphs[g].values.try_emplace(name);
    if (inserted) it->second.id = types_.value_count++;
    return it->second;
  }

  Status Define(int g, std::string_view name, ValueType type, const onnx::NodeProto* producer, int* id = nullptr) {
    const int count = types_.value_count;
    GraphValue& value = Entry(g, name);
    if (id != nullptr) *id = value.id;
    if (check_ && types_.value_count == count) {
      return Fail(g, producer, "defines '" + std::string(name) + "', which this graph defines already");
    }
    value.type = type;
    return Status::Ok();
  }

  const onnx::OpSchema* SchemaFor(const onnx::NodeProto& node) {
    const std::string_view domain = CanonicalDomain(node.domain());
    auto& by_op = schemas_[domain];
    auto it = by_op.find(node.op_type());
    if (it != by_op.end()) return it->second;
    const onnx::OpSchema* schema = nullptr;
    auto opset = opsets_.find(std::string(domain));
    if (opset != opsets_.end()) {
      schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), std::string(domain));
    }
    return by_op.emplace(node.op_type(), schema).first->second;
  }

  Status Fail(int g, const onnx::NodeProto* node, const std::string& what) const {
    return InvalidModel("graph '" + paths_[g] + "'" + (node ? ", " + NodeLabel(*node) : std::string()) + ": " + what);
  }

  const onnx::ModelProto& model_;
  const TypeInferenceOptions options_;
  const bool check_;
  const NodeFilter* filter_;
  std::unordered_map<std::string, int64_t> opsets_;
  std::unordered_map<std::string_view, std::unordered_map<std::string_view, const onnx::OpSchema*>> schemas_;
  std::vector<std::string> paths_;  // per graph, for messages
  ModelTypes types_;
};

}  // namespace

ValueType GraphTypes::Find(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? ValueType{} : it->second.type;
}

const GraphTypes* ModelTypes::Of(const onnx::GraphProto& graph) const {
  for (const GraphTypes& entry : graphs) {
    if (entry.graph == &graph) return &entry;
  }
  return nullptr;
}

ValueType ModelTypes::Lookup(int g, std::string_view name) const {
  for (int scope = g; scope >= 0; scope = graphs[scope].parent) {
    auto it = graphs[scope].values.find(name);
    if (it != graphs[scope].values.end()) return it->second.type;
  }
  return {};
}

ModelTypes InferModelTypes(const onnx::ModelProto& model, const TypeInferenceOptions& options) {
  TypeWalker walker(model, options, /*check=*/false, nullptr);
  (void)walker.Run();  // inference mode reports nothing
  return walker.Take();
}

Expected<ModelTypes> CheckModelTypes(const onnx::ModelProto& model, const NodeFilter& check_node) {
  TypeWalker walker(model, {}, /*check=*/true, &check_node);
  ONNX_AMP_RETURN_IF_ERROR(walker.Run());
  return walker.Take();
}

}  // namespace onnx_amp
