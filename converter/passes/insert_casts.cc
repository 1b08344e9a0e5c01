#include "converter/passes/insert_casts.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include <onnx/onnx_pb.h>

namespace onnx_amp {
namespace {

class CastInserter {
 public:
  CastInserter(ConversionPlan& plan, UniqueNames& names, ConversionReport& report)
      : plan_(plan), names_(names), report_(report), cast1_(report.opset > 0 && report.opset < 6) {}

  Status Run() {
    producers_.assign(values_.size(), Producer{});
    for (size_t n = 0; n < plan_.node_order.size(); ++n) {
      for (int id : plan_.OutputValues(n)) {
        if (id >= 0) producers_[id] = {plan_.node_order[n], plan_.nodes[n].graph};
      }
    }
    for (int g = 0; g < static_cast<int>(plan_.graphs.size()); ++g) ONNX_AMP_RETURN_IF_ERROR(FixOutputs(g));
    for (size_t n = 0; n < plan_.node_order.size(); ++n) {
      auto* node = const_cast<onnx::NodeProto*>(plan_.node_order[n]);
      const std::span<int> input_values = plan_.InputValues(n);
      const std::span<const DType> input_types = plan_.InputTypes(n);
      for (int i = 0; i < node->input_size(); ++i) {
        const int value = input_values[i];
        if (value < 0) continue;  // absent optional input: nothing to cast (pain 2)
        const DType wanted = input_types[i];
        const DType actual = values_.type(value);
        if (wanted == actual || !IsFloatingPoint(wanted) || !IsFloatingPoint(actual)) continue;
        const int cast = CastOf(value, wanted, plan_.nodes[n].graph);
        node->set_input(i, std::string(values_.name(cast)));
        input_values[i] = cast;
      }
    }
    for (GraphScope& scope : plan_.graphs) Materialize(scope);
    return Status::Ok();
  }

 private:
  struct Producer {
    const onnx::NodeProto* node = nullptr;
    int graph = -1;
  };

  Producer ProducerOf(int value) const {
    return value >= 0 && value < static_cast<int>(producers_.size()) ? producers_[value] : Producer{};
  }

  bool IsWithin(int graph, int ancestor) const {
    for (int g = graph; g >= 0; g = plan_.graphs[g].parent) {
      if (g == ancestor) return true;
    }
    return false;
  }

  // The value `value` converted to `dtype`, readable in graph `g`; creates the Cast in
  // `g` unless `g` or an enclosing graph already has one.
  int CastOf(int value, DType dtype, int g) {
    for (int scope = g; scope >= 0; scope = plan_.graphs[scope].parent) {
      auto it = casts_.find({value, dtype, scope});
      if (it != casts_.end()) return it->second;
    }
    const std::string suffix = "_amp_" + std::string(DTypeName(dtype));
    const std::string output = names_.Take(std::string(values_.name(value)) + suffix);
    return AddCast(value, output, dtype, g);
  }

  // Adds Cast(`input`) -> `output` in graph `g`; returns the id of `output`.
  int AddCast(int input, const std::string& output, DType dtype, int g) {
    onnx::NodeProto cast;
    cast.set_op_type("Cast");
    cast.set_name(names_.Take("amp_cast/" + output));
    cast.set_doc_string(kAmpCastTag);
    cast.add_input(std::string(values_.name(input)));
    cast.add_output(output);
    auto* to = cast.add_attribute();
    to->set_name("to");
    if (cast1_) {
      to->set_type(onnx::AttributeProto::STRING);
      to->set_s(onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(ToOnnx(dtype))));
      DeclareType(output, dtype, g);
    } else {
      to->set_type(onnx::AttributeProto::INT);
      to->set_i(ToOnnx(dtype));
    }

    const Producer producer = ProducerOf(input);
    if (producer.node != nullptr && producer.graph == g) {
      after_[producer.node].push_back(std::move(cast));
    } else {
      front_[g].push_back(std::move(cast));
    }
    const int id = values_.Set(output, dtype);
    casts_[{input, dtype, g}] = id;
    ++report_.casts_inserted;
    return id;
  }

  // Cast-1 has no type inference: a value_info entry gives its output a type, unless
  // the output is a graph output and so declared already.
  void DeclareType(const std::string& value, DType dtype, int g) {
    onnx::GraphProto& graph = *plan_.graphs[g].graph;
    for (const auto& output : graph.output()) {
      if (output.name() == value) return;
    }
    auto* info = graph.add_value_info();
    info->set_name(value);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(ToOnnx(dtype));
  }

  // Graph outputs whose dtype must differ from the value's new dtype.
  Status FixOutputs(int g) {
    GraphScope& scope = plan_.graphs[g];
    for (int k = 0; k < scope.graph->output_size(); ++k) {
      const std::string name = scope.graph->output(k).name();
      const int value = values_.Find(name);
      const DType wanted = scope.output_types[k];
      const DType actual = value < 0 ? DType::kUndefined : values_.type(value);
      if (wanted == actual || !IsFloatingPoint(wanted) || !IsFloatingPoint(actual)) continue;
      const Producer producer = ProducerOf(value);
      if (producer.node == nullptr || producer.graph != g) {
        if (g == 0) return InternalError("graph output '" + name + "' would change dtype but has no producer node");
        // A body output read from outside the body: cast it here, output the cast.
        const int cast = CastOf(value, wanted, g);
        scope.graph->mutable_output(k)->set_name(std::string(values_.name(cast)));
        continue;
      }
      // Rename the low value (its id, producer and readers stay); the Cast writes the
      // original name, a new value.
      const std::string low_name = names_.Take(name + "_amp_" + std::string(DTypeName(actual)));
      values_.Rename(value, low_name);
      RenameValue(value, name, low_name, g);
      AddCast(value, name, wanted, g);
    }
    return Status::Ok();
  }

  // Renames the value `value`, called `from` and produced in graph `g`, in its producer
  // and every reader (found by value id, which the plan keeps for each input and output).
  void RenameValue(int value, const std::string& from, const std::string& to, int g) {
    for (size_t n = 0; n < plan_.node_order.size(); ++n) {
      if (!IsWithin(plan_.nodes[n].graph, g)) continue;
      auto* node = const_cast<onnx::NodeProto*>(plan_.node_order[n]);
      const std::span<const int> inputs = plan_.InputValues(n);
      for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
        if (inputs[i] == value) node->set_input(i, to);
      }
      const std::span<const int> outputs = plan_.OutputValues(n);
      for (int o = 0; o < static_cast<int>(outputs.size()); ++o) {
        if (outputs[o] == value) node->set_output(o, to);
      }
    }
    for (int s = 0; s < static_cast<int>(plan_.graphs.size()); ++s) {
      if (s == g || !IsWithin(s, g)) continue;
      for (auto& output : *plan_.graphs[s].graph->mutable_output()) {
        if (output.name() == from) output.set_name(to);
      }
    }
    for (auto& info : *plan_.graphs[g].graph->mutable_value_info()) {
      if (info.name() == from) info.set_name(to);
    }
  }

  // Rebuilds the node list of `scope` with the new Casts in place; moves the existing
  // nodes (no copies), so pointers into them stay valid.
  void Materialize(GraphScope& scope) {
    const int g = static_cast<int>(&scope - plan_.graphs.data());
    auto* nodes = scope.graph->mutable_node();
    std::vector<onnx::NodeProto*> old(nodes->size());
    nodes->ExtractSubrange(0, nodes->size(), old.data());
    for (onnx::NodeProto& cast : front_[g]) *nodes->Add() = std::move(cast);
    for (onnx::NodeProto* node : old) {
      nodes->AddAllocated(node);
      auto it = after_.find(node);
      if (it == after_.end()) continue;
      for (onnx::NodeProto& cast : it->second) *nodes->Add() = std::move(cast);
    }
  }

  ConversionPlan& plan_;
  ValueTable& values_ = plan_.values;
  UniqueNames& names_;
  ConversionReport& report_;
  const bool cast1_;  // the model's opset is below 6: Cast-1 takes `to` as a type name
  std::vector<Producer> producers_;  // by value id
  std::map<std::tuple<int, DType, int>, int> casts_;  // (value, dtype, graph) -> cast output
  std::unordered_map<const onnx::NodeProto*, std::vector<onnx::NodeProto>> after_;
  std::map<int, std::vector<onnx::NodeProto>> front_;
};

}  // namespace

Status InsertCasts(PassContext& context) {
  return CastInserter(context.plan, context.names, context.report).Run();
}

}  // namespace onnx_amp
