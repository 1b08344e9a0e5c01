#include "converter/paint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "ops/op_def.h"
#include "runtime/onnx/onnx_checks.h"

namespace onnx_amp {
namespace {

std::string NormalizeDomain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

std::string NodeLabel(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() + "(" + (node.output_size() ? node.output(0) : "") + ")" : node.name();
}

void CollectTypes(const onnx::GraphProto& graph, ValueTypeMap& types) {
  auto add_value_info = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type()) return;
    auto dtype = DTypeFromOnnx(info.type().tensor_type().elem_type());
    if (dtype && *dtype != DType::kUndefined) types[info.name()] = *dtype;
  };
  for (const auto& info : graph.input()) add_value_info(info);
  for (const auto& info : graph.output()) add_value_info(info);
  for (const auto& info : graph.value_info()) add_value_info(info);
  for (const auto& init : graph.initializer()) {
    if (auto dtype = DTypeFromOnnx(init.data_type())) types[init.name()] = *dtype;
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectTypes(attr.g(), types);
      for (const auto& sub : attr.graphs()) CollectTypes(sub, types);
    }
  }
}

// The inputs and outputs of one node bound to one type variable.
struct Unit {
  const onnx::NodeProto* node = nullptr;
  int node_ref = -1;
  std::string type_var;
  std::vector<int> inputs;
  std::vector<int> outputs;
  PrecisionClass precision_class = PrecisionClass::kFixedFp32;
  bool eligible = false;
  bool cast_output = false;  // output of Cast(to=float): decided by step 10
  bool deny = false;
  bool allow = false;
  std::string reason;
  std::vector<int> fanin;   // units producing this unit's inputs
  std::vector<int> fanout;  // units reading this unit's outputs
};

struct NodeRef {
  onnx::NodeProto* node = nullptr;
  int graph = 0;
  NodeClass node_class;
  std::vector<int> input_unit;   // unit of each input, -1 if none
  std::vector<int> output_unit;  // unit of each output, -1 if none
};

struct Slot {
  int node_ref = -1;
  int index = -1;
};

class Painter {
 public:
  Painter(onnx::ModelProto& model, const ValueTypeMap& types, const PrecisionPolicy& policy, ConvertTarget target)
      : model_(model), types_(types), policy_(policy), target_(target) {}

  Expected<ConversionPlan> Run() {
    plan_.low_type = policy_.LowType();
    plan_.original_types = types_;
    for (const auto& opset : model_.opset_import()) opsets_[NormalizeDomain(opset.domain())] = opset.version();
    AddGraph(*model_.mutable_graph(), -1, "main");
    for (int r = 0; r < static_cast<int>(refs_.size()); ++r) BuildUnits(r);
    LinkUnits();
    KeepShapeArithmetic();
    if (policy_.kind == PolicyKind::kMixedFloat16) DenyTinyEpsilonGuards();
    if (policy_.kind != PolicyKind::kFloat32) {
      PropagateDenyForward();
      PaintBetweenAllows();
      if (policy_.kind == PolicyKind::kMixedBFloat16) PaintInferAfterAllow();
      PaintThroughClear();
      RetargetCasts();
    }
    FillPlan();
    return std::move(plan_);
  }

 private:
  DType TypeOf(const std::string& name) const {
    auto it = types_.find(name);
    return it == types_.end() ? DType::kUndefined : it->second;
  }

  void AddGraph(onnx::GraphProto& graph, int parent, const std::string& path) {
    const int index = static_cast<int>(plan_.graphs.size());
    plan_.graphs.push_back({&graph, parent, path, {}});
    for (int o = 0; o < graph.output_size(); ++o) graph_output_uses_[graph.output(o).name()].push_back({index, o});
    for (const auto& init : graph.initializer()) constants_[init.name()] = &init;
    for (auto& node : *graph.mutable_node()) {
      const int ref = static_cast<int>(refs_.size());
      NodeRef node_ref;
      node_ref.node = &node;
      node_ref.graph = index;
      node_ref.node_class = policy_.ClassOf(node.domain(), node.op_type(), node.name());
      refs_.push_back(std::move(node_ref));
      for (int o = 0; o < node.output_size(); ++o) {
        if (!node.output(o).empty()) producers_[node.output(o)] = {ref, o};
      }
      if (node.op_type() == "Constant" && node.output_size() == 1) {
        for (const auto& attr : node.attribute()) {
          if (attr.name() == "value") constants_[node.output(0)] = &attr.t();
        }
      }
      for (int i = 0; i < node.input_size(); ++i) {
        if (!node.input(i).empty()) consumers_[node.input(i)].push_back({ref, i});
      }
      for (auto& attr : *node.mutable_attribute()) {
        const std::string sub_path = path + "/" + NodeLabel(node) + "." + attr.name();
        if (attr.has_g()) AddGraph(*attr.mutable_g(), index, sub_path);
        for (int g = 0; g < attr.graphs_size(); ++g) {
          AddGraph(*attr.mutable_graphs(g), index, sub_path + "[" + std::to_string(g) + "]");
        }
      }
    }
  }

  // Softmax/LogSoftmax writing a kept graph output stays float32, as Keras keeps the
  // model's final activation.
  bool FeedsKeptOutput(const onnx::NodeProto& node) const {
    if (node.op_type() != "Softmax" && node.op_type() != "LogSoftmax") return false;
    for (const auto& out : node.output()) {
      auto it = graph_output_uses_.find(out);
      if (it == graph_output_uses_.end()) continue;
      for (const auto& [graph, index] : it->second) {
        if (graph != 0 || policy_.keep_io_types.Keeps(out)) return true;
      }
    }
    return false;
  }

  void BuildUnits(int ref) {
    NodeRef& node_ref = refs_[ref];
    const onnx::NodeProto& node = *node_ref.node;
    node_ref.input_unit.assign(node.input_size(), -1);
    node_ref.output_unit.assign(node.output_size(), -1);
    if (node_ref.node_class.reason == "unknown op") {
      const std::string domain = NormalizeDomain(node.domain());
      unknown_ops_.insert((domain.empty() ? "ai.onnx" : domain) + ":" + node.op_type());
    }
    if (FeedsKeptOutput(node)) {
      node_ref.node_class = {PrecisionClass::kDeny, "feeds a float32 graph output (keep-io-types)", false};
    }

    const std::string domain = NormalizeDomain(node.domain());
    auto opset = opsets_.find(domain);
    const onnx::OpSchema* schema =
        opset == opsets_.end() ? nullptr
                               : onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), domain);

    // Group the inputs and outputs by type variable.
    struct Draft {
      std::vector<int> inputs, outputs;
      const std::vector<std::string>* allowed = nullptr;
    };
    std::map<std::string, Draft> drafts;
    auto variable_of = [&](const std::vector<onnx::OpSchema::FormalParameter>& params, int index,
                           const char* side) -> std::optional<std::pair<std::string, const std::vector<std::string>*>> {
      if (schema == nullptr) return std::pair<std::string, const std::vector<std::string>*>{"*", nullptr};
      if (params.empty()) return std::nullopt;
      const int p = std::min(index, static_cast<int>(params.size()) - 1);
      if (p < index && params[p].GetOption() != onnx::OpSchema::Variadic) return std::nullopt;
      const std::string& type_str = params[p].GetTypeStr();
      for (const auto& constraint : schema->typeConstraintParams()) {
        if (constraint.type_param_str != type_str) continue;
        std::string key = type_str;
        if (params[p].GetOption() == onnx::OpSchema::Variadic && !params[p].GetIsHomogeneous()) {
          key += std::string("#") + side + std::to_string(index);
        }
        return std::pair{key, &constraint.allowed_type_strs};
      }
      return std::nullopt;  // a fixed type such as tensor(float): not paintable
    };
    static const std::vector<onnx::OpSchema::FormalParameter> kNoParams;
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;  // absent optional input: nothing to type
      auto var = variable_of(schema ? schema->inputs() : kNoParams, i, "in");
      if (!var) continue;
      Draft& draft = drafts[var->first];
      draft.inputs.push_back(i);
      draft.allowed = var->second;
    }
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty()) continue;
      auto var = variable_of(schema ? schema->outputs() : kNoParams, o, "out");
      if (!var) continue;
      Draft& draft = drafts[var->first];
      draft.outputs.push_back(o);
      draft.allowed = var->second;
    }

    const OpPrecisionDef* def = FindOpPrecision(node.domain(), node.op_type());
    const uint32_t fixed_inputs = def ? def->fixed_fp32_inputs : 0;
    for (auto& [type_var, draft] : drafts) {
      bool all_float32 = true;
      bool any_float32 = false;
      for (int i : draft.inputs) {
        const DType t = TypeOf(node.input(i));
        any_float32 |= t == DType::kFloat32;
        all_float32 &= t == DType::kFloat32;
      }
      for (int o : draft.outputs) {
        const DType t = TypeOf(node.output(o));
        any_float32 |= t == DType::kFloat32;
        all_float32 &= t == DType::kFloat32;
      }
      if (!any_float32) continue;

      Unit unit;
      unit.node = &node;
      unit.node_ref = ref;
      unit.type_var = type_var;
      unit.precision_class = node_ref.node_class.precision_class;
      unit.eligible = true;
      for (int i : draft.inputs) {
        if (i < 32 && (fixed_inputs & InputBit(i))) {
          if (draft.inputs.size() + draft.outputs.size() > 1) {
            unit.eligible = false;
            unit.reason = "input " + std::to_string(i) + " stays float32 (ops.def) and shares type " + type_var;
          }
          continue;
        }
        unit.inputs.push_back(i);
      }
      unit.outputs = draft.outputs;
      if (unit.inputs.empty() && unit.outputs.empty()) continue;

      const bool is_cast = node.op_type() == "Cast" && domain.empty();
      if (is_cast && !unit.outputs.empty()) unit.cast_output = true;
      if (is_cast && unit.outputs.empty()) unit.precision_class = PrecisionClass::kClear;

      if (!unit.eligible) {
        // reason already set
      } else if (!all_float32) {
        unit.eligible = false;
        unit.reason = "mixes float32 with other or unknown types";
      } else if (unit.precision_class == PrecisionClass::kFixedFp32) {
        unit.eligible = false;
        unit.reason = node_ref.node_class.reason == "unknown op" ? "unknown op" : "fixed float32: " + node_ref.node_class.reason;
      } else if (schema == nullptr && target_ == ConvertTarget::kPortable) {
        unit.eligible = false;
        unit.reason = "no ONNX schema for " + node.op_type() + " at the model opset (target portable)";
      } else if (target_ == ConvertTarget::kPortable && draft.allowed != nullptr) {
        const std::string wanted = "tensor(" + std::string(DTypeName(plan_.low_type)) + ")";
        if (std::find(draft.allowed->begin(), draft.allowed->end(), wanted) == draft.allowed->end()) {
          unit.eligible = false;
          unit.reason = "schema " + node.op_type() + "-" + std::to_string(schema->SinceVersion()) + " does not admit " +
                        std::string(DTypeName(plan_.low_type)) + " for " + type_var + " (target portable)";
        }
      }
      if (unit.eligible && unit.cast_output) {
        int64_t to = 0;
        for (const auto& attr : node.attribute()) {
          if (attr.name() == "to") to = attr.i();
        }
        if (to != ToOnnx(DType::kFloat32)) {
          unit.eligible = false;
          unit.reason = "Cast to a non-float32 type";
        }
      }
      if (unit.eligible) {
        unit.reason = std::string(PrecisionClassName(unit.precision_class)) + ": " + node_ref.node_class.reason;
        if (unit.cast_output) unit.reason = "Cast(to=float): kept float32, not every consumer is low";
      }
      const int u = static_cast<int>(units_.size());
      for (int i : unit.inputs) node_ref.input_unit[i] = u;
      for (int o : unit.outputs) node_ref.output_unit[o] = u;
      units_.push_back(std::move(unit));
    }
  }

  // Shape math done in float (Shape -> Cast(float) -> Div -> Floor -> Cast(int64)):
  // units both downstream of a Cast from an integer and upstream of a Cast to an
  // integer stay float32, since float16 holds integers exactly only up to 2048 (pain 12).
  void KeepShapeArithmetic() {
    const int n = static_cast<int>(units_.size());
    std::vector<char> from_int(n, 0), to_int(n, 0);
    std::vector<int> forward, backward;
    for (int u = 0; u < n; ++u) {
      const onnx::NodeProto& node = *units_[u].node;
      if (node.op_type() != "Cast" || !NormalizeDomain(node.domain()).empty()) continue;
      const DType input_type = TypeOf(node.input(0));
      const DType output_type = TypeOf(node.output(0));
      if (units_[u].cast_output && (IsInteger(input_type) || input_type == DType::kBool)) {
        from_int[u] = 1;
        forward.push_back(u);
      }
      if (!units_[u].cast_output && (IsInteger(output_type) || output_type == DType::kBool)) {
        to_int[u] = 1;
        backward.push_back(u);
      }
    }
    auto walk = [&](std::vector<int>& stack, std::vector<char>& reached, bool down) {
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int v : down ? units_[u].fanout : units_[u].fanin) {
          if (reached[v]) continue;
          reached[v] = 1;
          stack.push_back(v);
        }
      }
    };
    walk(forward, from_int, true);
    walk(backward, to_int, false);
    for (int u = 0; u < n; ++u) {
      if (!from_int[u] || !to_int[u] || !units_[u].eligible) continue;
      units_[u].eligible = false;
      units_[u].reason = "shape arithmetic between integer Casts: float16 is exact for integers only up to 2048";
    }
  }

  // The smallest non-zero magnitude of a float32 initializer or Constant, if known.
  std::optional<float> SmallestConstant(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end() || it->second->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
    const onnx::TensorProto& t = *it->second;
    std::vector<float> values(t.float_data().begin(), t.float_data().end());
    if (!t.raw_data().empty() && t.raw_data().size() % sizeof(float) == 0) {
      values.resize(t.raw_data().size() / sizeof(float));
      std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
    }
    std::optional<float> smallest;
    for (float v : values) {
      if (v != 0.0f && (!smallest || std::fabs(v) < *smallest)) smallest = std::fabs(v);
    }
    return smallest;
  }

  // x / (y + eps) and friends with eps below float16's smallest normal (6.1e-5): the
  // eps vanishes in float16 and the guard divides by zero (pain 10; OpenVINO keeps
  // these float32). The guard and its reader are denied.
  void DenyTinyEpsilonGuards() {
    constexpr float kHalfSmallestNormal = 6.103515625e-05f;
    for (Unit& unit : units_) {
      const onnx::NodeProto& node = *unit.node;
      if (node.op_type() != "Add" && node.op_type() != "Max") continue;
      bool tiny = false;
      for (int i : unit.inputs) {
        auto smallest = SmallestConstant(node.input(i));
        tiny |= smallest && *smallest < kHalfSmallestNormal;
      }
      if (!tiny) continue;
      for (int reader : unit.fanout) {
        const std::string& op = units_[reader].node->op_type();
        if (op != "Div" && op != "Reciprocal" && op != "Pow" && op != "Sqrt" && op != "Log") continue;
        for (Unit* guarded : {&unit, &units_[reader]}) {
          if (!guarded->eligible || guarded->precision_class == PrecisionClass::kDeny) continue;
          if (refs_[guarded->node_ref].node_class.user_pinned) continue;
          guarded->precision_class = PrecisionClass::kDeny;
          guarded->reason = "deny: epsilon guard '" + NodeLabel(node) + "' adds a constant below float16's smallest normal";
        }
      }
    }
  }

  void LinkUnits() {
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const Unit& unit = units_[u];
      for (int i : unit.inputs) {
        auto it = producers_.find(unit.node->input(i));
        if (it == producers_.end()) continue;
        const int p = refs_[it->second.node_ref].output_unit[it->second.index];
        if (p < 0) continue;
        units_[p].fanout.push_back(u);
        units_[u].fanin.push_back(p);
      }
    }
  }

  // Units that take part in steps 5-8.
  bool Paintable(int u) const { return units_[u].eligible && !units_[u].cast_output; }
  bool Is(int u, PrecisionClass c) const { return Paintable(u) && units_[u].precision_class == c; }
  std::string Label(int u) const { return NodeLabel(*units_[u].node); }

  void PropagateDenyForward() {
    const int n = static_cast<int>(units_.size());
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kDeny)) units_[u].deny = true;
    }
    // Clear units upstream of deny or infer units (through clear units only).
    std::vector<char> upstream(n, 0);
    std::vector<int> stack;
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kDeny) || Is(u, PrecisionClass::kInfer)) stack.push_back(u);
    }
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int p : units_[u].fanin) {
        if (Is(p, PrecisionClass::kClear) && !upstream[p]) {
          upstream[p] = 1;
          stack.push_back(p);
        }
      }
    }
    for (int seed = 0; seed < n; ++seed) {
      if (!Is(seed, PrecisionClass::kDeny)) continue;
      stack.assign(1, seed);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int v : units_[u].fanout) {
          if (units_[v].deny) continue;
          if (!(Is(v, PrecisionClass::kInfer) || (Is(v, PrecisionClass::kClear) && upstream[v]))) continue;
          units_[v].deny = true;
          units_[v].reason = "float32: downstream of deny node '" + Label(seed) + "'";
          stack.push_back(v);
        }
      }
    }
  }

  bool Passable(int u) const {
    return (Is(u, PrecisionClass::kInfer) || Is(u, PrecisionClass::kClear)) && !units_[u].deny;
  }

  void PaintBetweenAllows() {
    const int n = static_cast<int>(units_.size());
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kAllow)) units_[u].allow = true;
    }
    // from[u]: an allow unit upstream of u (forward walk); to[u]: one downstream.
    std::vector<int> from(n, -1), to(n, -1);
    auto walk = [&](std::vector<int>& reached, bool forward) {
      std::vector<int> stack;
      for (int a = 0; a < n; ++a) {
        if (!Is(a, PrecisionClass::kAllow)) continue;
        stack.assign(1, a);
        while (!stack.empty()) {
          const int u = stack.back();
          stack.pop_back();
          for (int v : forward ? units_[u].fanout : units_[u].fanin) {
            if (!Passable(v) || reached[v] >= 0) continue;
            reached[v] = a;
            stack.push_back(v);
          }
        }
      }
    };
    walk(from, true);
    walk(to, false);
    for (int u = 0; u < n; ++u) {
      if (from[u] < 0 || to[u] < 0) continue;
      units_[u].allow = true;
      units_[u].reason = "low: between allow nodes '" + Label(from[u]) + "' and '" + Label(to[u]) + "'";
    }
  }

  void PaintInferAfterAllow() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
        if (!Is(u, PrecisionClass::kInfer) || units_[u].deny || units_[u].allow) continue;
        int allow_fanin = -1;
        bool deny_fanin = false;
        for (int p : units_[u].fanin) {
          if (units_[p].allow) allow_fanin = p;
          if (units_[p].deny) deny_fanin = true;
        }
        if (allow_fanin < 0 || deny_fanin) continue;
        units_[u].allow = true;
        units_[u].reason = "low: bfloat16 infer op fed by allow node '" + Label(allow_fanin) + "'";
        changed = true;
      }
    }
  }

  void PaintThroughClear() {
    std::vector<int> stack;
    for (int a = 0; a < static_cast<int>(units_.size()); ++a) {
      if (!units_[a].allow) continue;
      stack.assign(1, a);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (const std::vector<int>* next : {&units_[u].fanout, &units_[u].fanin}) {
          for (int v : *next) {
            if (!Is(v, PrecisionClass::kClear) || units_[v].deny || units_[v].allow) continue;
            units_[v].allow = true;
            units_[v].reason = "low: clear op next to low node '" + Label(a) + "'";
            stack.push_back(v);
          }
        }
      }
    }
  }

  void RetargetCasts() {
    for (Unit& unit : units_) {
      if (!unit.cast_output || !unit.eligible) continue;
      const std::string& out = unit.node->output(unit.outputs.front());
      if (graph_output_uses_.count(out)) continue;
      auto it = consumers_.find(out);
      if (it == consumers_.end() || it->second.empty()) continue;
      bool all_low = true;
      for (const Slot& slot : it->second) {
        const int c = refs_[slot.node_ref].input_unit[slot.index];
        all_low &= c >= 0 && units_[c].allow;
      }
      if (!all_low) continue;
      unit.allow = true;
      unit.reason = "low: Cast(to=float) retargeted, every consumer is low";
    }
  }

  // A unit that is still neither deny nor allow keeps float32; say why.
  std::string FinalReason(const Unit& unit) const {
    if (!unit.eligible || unit.allow || unit.deny || unit.cast_output) return unit.reason;
    switch (unit.precision_class) {
      case PrecisionClass::kAllow: return unit.reason;
      case PrecisionClass::kInfer: return "float32: infer op not between low nodes";
      case PrecisionClass::kDeny: return unit.reason;
      case PrecisionClass::kClear: return "float32: clear op with no low neighbour";
      case PrecisionClass::kFixedFp32: return unit.reason;
    }
    return unit.reason;
  }

  void FillPlan() {
    const DType low = plan_.low_type;
    for (const NodeRef& ref : refs_) {
      const onnx::NodeProto& node = *ref.node;
      NodePlan node_plan;
      node_plan.graph = ref.graph;
      node_plan.node_class = ref.node_class;
      bool any_low = false;
      const Unit* first = nullptr;
      const Unit* first_low = nullptr;
      auto colour = [&](int u, const std::string& name) {
        if (u < 0) return name.empty() ? DType::kUndefined : TypeOf(name);
        const Unit& unit = units_[u];
        if (first == nullptr) first = &unit;
        if (!unit.allow) return DType::kFloat32;
        any_low = true;
        if (first_low == nullptr) first_low = &unit;
        return low;
      };
      for (int i = 0; i < node.input_size(); ++i) node_plan.input_types.push_back(colour(ref.input_unit[i], node.input(i)));
      for (int o = 0; o < node.output_size(); ++o) {
        const DType t = colour(ref.output_unit[o], node.output(o));
        node_plan.output_types.push_back(t);
        if (!node.output(o).empty()) plan_.value_types[node.output(o)] = t;
      }
      if (any_low) {
        node_plan.compute_type = low;
        node_plan.reason = FinalReason(*first_low);
      } else if (first != nullptr) {
        node_plan.compute_type = DType::kFloat32;
        node_plan.reason = FinalReason(*first);
      } else {
        node_plan.reason = "no float32 tensors";
      }
      plan_.node_order.push_back(&node);
      plan_.nodes.emplace(&node, std::move(node_plan));
    }
    for (const auto& [name, dtype] : types_) plan_.value_types.emplace(name, dtype);

    // Main-graph inputs that are not kept take the low dtype when a consumer reads it low.
    const onnx::GraphProto& main = *plan_.graphs[0].graph;
    for (const auto& input : main.input()) {
      const std::string& name = input.name();
      if (TypeOf(name) != DType::kFloat32 || policy_.keep_io_types.Keeps(name) || producers_.count(name)) continue;
      auto it = consumers_.find(name);
      if (it == consumers_.end()) continue;
      for (const Slot& slot : it->second) {
        if (plan_.nodes.at(refs_[slot.node_ref].node).input_types[slot.index] == low) {
          plan_.value_types[name] = low;
          break;
        }
      }
    }
    for (int g = 0; g < static_cast<int>(plan_.graphs.size()); ++g) {
      GraphScope& scope = plan_.graphs[g];
      for (const auto& output : scope.graph->output()) {
        const std::string& name = output.name();
        const bool keep = g != 0 || policy_.keep_io_types.Keeps(name);
        scope.output_types.push_back(keep ? TypeOf(name) : plan_.value_types[name]);
      }
    }
    plan_.unknown_ops.assign(unknown_ops_.begin(), unknown_ops_.end());
  }

  onnx::ModelProto& model_;
  const ValueTypeMap& types_;
  const PrecisionPolicy& policy_;
  ConvertTarget target_;
  std::map<std::string, int64_t> opsets_;
  ConversionPlan plan_;
  std::vector<NodeRef> refs_;
  std::vector<Unit> units_;
  std::unordered_map<std::string, Slot> producers_;
  std::unordered_map<std::string, std::vector<Slot>> consumers_;
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> graph_output_uses_;  // (graph, output index)
  std::set<std::string> unknown_ops_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;  // initializers and Constant values
};

}  // namespace

Expected<ValueTypeMap> InferValueTypes(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  ONNX_AMP_RETURN_IF_ERROR(InferShapes(copy, /*strict=*/false));
  ValueTypeMap types;
  CollectTypes(copy.graph(), types);
  return types;
}

Expected<ConversionPlan> Paint(onnx::ModelProto& model, const ValueTypeMap& types, const PrecisionPolicy& policy,
                               ConvertTarget target) {
  return Painter(model, types, policy, target).Run();
}

}  // namespace onnx_amp
