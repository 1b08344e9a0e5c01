#include "converter/painter.h"

#include "ops/op_def.h"
#include "runtime/onnx/onnx_checks.h"

namespace onnx_amp::paint_internal {

// Shape math done in float (Shape -> Cast(float) -> Div -> Floor -> Cast(int64)):
// units both downstream of a Cast from an integer and upstream of a Cast to an
// integer stay float32, since float16 holds integers exactly only up to 2048 (pain 12).
void Painter::KeepShapeArithmetic() {
  const int n = static_cast<int>(units_.size());
  std::vector<char> from_int(n, 0), to_int(n, 0);
  std::vector<int> forward, backward;
  for (int u = 0; u < n; ++u) {
    if (!refs_[units_[u].node_ref].op->cast) continue;
    const onnx::NodeProto& node = *units_[u].node;
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
      for (int v : down ? Fanout(u) : Fanin(u)) {
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
    units_[u].reason = Text("shape arithmetic between integer Casts: float16 is exact for integers only up to 2048");
  }
}

// Whether a float32 initializer or Constant holds a non-zero magnitude below `limit`.
bool Painter::HoldsTinyConstant(int value, float limit) const {
  auto it = summaries_.find(value);
  return it != summaries_.end() && it->second.smallest_nonzero > 0.0f && it->second.smallest_nonzero < limit;
}

// x / (y + eps) and friends with eps below float16's smallest normal (6.1e-5): the
// eps vanishes in float16 and the guard divides by zero (pain 10; OpenVINO keeps
// these float32). The guard and its reader are denied.
void Painter::DenyTinyEpsilonGuards() {
  constexpr float kHalfSmallestNormal = 6.103515625e-05f;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    Unit& unit = units_[u];
    const onnx::NodeProto& node = *unit.node;
    if (node.op_type() != "Add" && node.op_type() != "Max") continue;
    bool tiny = false;
    for (int i : Inputs(u)) tiny |= HoldsTinyConstant(InputValue(refs_[unit.node_ref], i), kHalfSmallestNormal);
    if (!tiny) continue;
    for (int reader : Fanout(u)) {
      const std::string& op = units_[reader].node->op_type();
      if (op != "Div" && op != "Reciprocal" && op != "Pow" && op != "Sqrt" && op != "Log") continue;
      for (Unit* guarded : {&unit, &units_[reader]}) {
        if (!guarded->eligible || guarded->precision_class == PrecisionClass::kDeny) continue;
        if (refs_[guarded->node_ref].node_class.user_pinned) continue;
        guarded->precision_class = PrecisionClass::kDeny;
        guarded->reason = Text("deny: epsilon guard '" + NodeLabel(node) + "' adds a constant below float16's smallest normal");
      }
    }
  }
}

// Step 3 seeds: the unit turns deny unless the user pinned its node.
void Painter::SeedDeny(int u, const std::string& reason) {
  Unit& unit = units_[u];
  if (!Paintable(u) || refs_[unit.node_ref].node_class.user_pinned) return;
  unit.precision_class = PrecisionClass::kDeny;
  unit.reason = Text("deny: " + reason);
}

void Painter::SeedDenyNode(int ref, const std::string& reason) {
  const NodeRef& node_ref = refs_[ref];
  const auto slots = slot_units_.begin() + node_ref.slots;
  const std::set<int> units(slots, slots + node_ref.inputs + node_ref.outputs);
  for (int u : units) {
    if (u >= 0) SeedDeny(u, reason);
  }
}

// init_max / data_max (MO AutoCast): a constant, or a value recorded on sample data,
// beyond the low dtype's largest finite number would be clamped or turn into inf;
// the units that hold or read it stay float32 (pain 9, pain 11).
void Painter::DenyOutOfRangeValues() {
  const double largest = LargestFinite(plan_.low_type);
  const std::string low_name(DTypeName(plan_.low_type));
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    const NodeRef& ref = refs_[units_[u].node_ref];
    // Value `id`, input or output `index` of the unit's node. Its name is read only where
    // it matters: most values are neither constants nor recorded on sample data.
    auto check = [&](int id, bool input, int index) {
      auto name = [&]() -> const std::string& { return input ? ref.node->input(index) : ref.node->output(index); };
      auto summary = summaries_.find(id);
      if (summary != summaries_.end()) {
        const double worst = summary->second.largest_finite;
        if (worst > largest) {
          SeedDeny(u, "constant '" + name() + "' holds |x| = " + FormatNumber(worst) + ", beyond " + low_name +
                          "'s largest finite " + FormatNumber(largest) + " (init_max)");
        }
      }
      if (policy_.data_ranges.empty()) return;
      auto recorded = policy_.data_ranges.find(name());
      if (recorded != policy_.data_ranges.end() && recorded->second > largest) {
        SeedDeny(u, "value '" + name() + "' reached |x| = " + FormatNumber(recorded->second) +
                        " on sample data, beyond " + low_name + "'s largest finite " + FormatNumber(largest) +
                        " (data_max)");
      }
    };
    for (int i : Inputs(u)) check(InputValue(ref, i), true, i);
    for (int o : Outputs(u)) check(OutputValue(ref, o), false, o);
  }
}

// Exp -> ReduceSum/ReduceMean, directly or through element-wise and data-movement
// ops: a sum of exponentials overflows float16 long after each term fits (OpenVINO
// MarkExpReduceOpPath). The Exp, the path and the reduction stay float32.
void Painter::DenyExpReductions() {
  const int n = static_cast<int>(units_.size());
  // -2: not reached. Each search resets only what it reached, so the cost is what the
  // searches visit, not n per Exp.
  std::vector<int> parent(n, -2);
  std::vector<int> reached, queue;
  for (int e = 0; e < n; ++e) {
    if (!IsOp(e, "Exp") || units_[e].cluster >= 0) continue;
    for (int u : reached) parent[u] = -2;
    parent[e] = -1;
    reached.assign(1, e);
    queue.assign(1, e);
    for (size_t q = 0; q < queue.size(); ++q) {
      const int u = queue[q];
      for (int v : Fanout(u)) {
        if (parent[v] != -2 || units_[v].cluster >= 0) continue;
        parent[v] = u;
        reached.push_back(v);
        if (IsOp(v, "ReduceSum") || IsOp(v, "ReduceMean")) {
          const std::string reason = "Exp '" + Label(e) + "' feeds reduction '" + Label(v) +
                                     "': the sum outgrows the terms, past float16's range and bfloat16's precision (Exp->ReduceSum pattern)";
          for (int w = v; w >= 0; w = parent[w]) SeedDeny(w, reason);
          continue;
        }
        const PrecisionClass c = units_[v].precision_class;
        if (c == PrecisionClass::kInfer || c == PrecisionClass::kClear) queue.push_back(v);
      }
    }
  }
}

// The node producing `name` if it is the default-domain op `op`, else nullptr.
const onnx::NodeProto* Painter::ProducerOp(const std::string& name, const char* op, int* ref) const {
  const Slot source = ProducerOf(values_.Find(name));
  if (source.node_ref < 0) return nullptr;
  const onnx::NodeProto& node = *refs_[source.node_ref].node;
  if (node.op_type() != op || !IsOnnxDomain(node.domain())) return nullptr;
  if (ref != nullptr) *ref = source.node_ref;
  return &node;
}

// Unfused LayerNorm: d = x - ReduceMean(x); v = ReduceMean(d^2 or d*d);
// y = d / Sqrt(v + eps). The statistics and the normalisation stay float32: d^2
// overflows float16 once |x - mu| > 255 (pain 9; OpenVINO keeps it float32).
void Painter::DenyDecomposedLayerNorm() {
  for (int div_ref = 0; div_ref < static_cast<int>(refs_.size()); ++div_ref) {
    const onnx::NodeProto& div = *refs_[div_ref].node;
    if (div.op_type() != "Div" || !IsOnnxDomain(div.domain()) || div.input_size() != 2) continue;
    std::vector<int> refs = {div_ref};
    int ref = -1;
    const onnx::NodeProto* sqrt = ProducerOp(div.input(1), "Sqrt", &ref);
    if (sqrt == nullptr) continue;
    refs.push_back(ref);
    const onnx::NodeProto* add = ProducerOp(sqrt->input(0), "Add", &ref);
    if (add == nullptr || add->input_size() != 2) continue;
    refs.push_back(ref);
    const onnx::NodeProto* var = nullptr;
    for (int side = 0; side < 2 && var == nullptr; ++side) {
      if (IsConstant(add->input(1 - side))) var = ProducerOp(add->input(side), "ReduceMean", &ref);
    }
    if (var == nullptr) continue;
    refs.push_back(ref);
    const std::string& d = div.input(0);
    const onnx::NodeProto* square = ProducerOp(var->input(0), "Pow", &ref);
    if (square == nullptr || square->input(0) != d) {
      square = ProducerOp(var->input(0), "Mul", &ref);
      if (square == nullptr || square->input_size() != 2 || square->input(0) != d || square->input(1) != d) continue;
    }
    refs.push_back(ref);
    const onnx::NodeProto* sub = ProducerOp(d, "Sub", &ref);
    if (sub == nullptr || sub->input_size() != 2) continue;
    refs.push_back(ref);
    const onnx::NodeProto* mean = ProducerOp(sub->input(1), "ReduceMean", &ref);
    if (mean == nullptr || mean->input(0) != sub->input(0)) continue;
    refs.push_back(ref);
    const std::string reason = "decomposed LayerNorm ending in '" + NodeLabel(div) +
                               "': its statistics stay float32 ((x - mean)^2 overflows float16 above |x - mean| = 255, and x - mean "
                               "cancels the leading bits of bfloat16)";
    for (int r : refs) SeedDenyNode(r, reason);
  }
}

// Sums over many elements (MO max_depth_of_reduction; anchors (b): long-axis
// reductions): a running sum of n similar terms held in a dtype with p significand
// bits stops growing once n reaches 2^p, so runtimes that accumulate in the low dtype
// return finite but wrong sums; float16 also overflows at 65504.
Status Painter::DenyLongReductions() {
  std::vector<int> candidates;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    const Unit& unit = units_[u];
    if (Paintable(u) && unit.precision_class != PrecisionClass::kDeny && !Inputs(u).empty() &&
        Inputs(u).front() == 0 && refs_[unit.node_ref].op->sum_reduction) {
      candidates.push_back(u);
    }
  }
  if (candidates.empty()) return Status::Ok();
  onnx::ModelProto copy = model_;
  ONNX_AMP_RETURN_IF_ERROR(InferShapes(copy, /*strict=*/false));
  std::unordered_map<std::string, std::vector<int64_t>> shapes;
  CollectShapes(copy.graph(), shapes);
  const double limit = 1.0 / UnitRoundoff(plan_.low_type);
  for (int u : candidates) {
    auto count = ReducedCount(refs_[units_[u].node_ref], shapes);
    if (!count || static_cast<double>(*count) < limit) continue;
    SeedDeny(u, "reduces " + std::to_string(*count) + " elements, at least 2^p = " + FormatNumber(limit) +
                    " for " + std::string(DTypeName(plan_.low_type)) + " (long-axis reduction)");
  }
  return Status::Ok();
}

// Elements summed into each output of a Reduce* node, when the shape is known.
std::optional<int64_t> Painter::ReducedCount(const NodeRef& ref,
                                    const std::unordered_map<std::string, std::vector<int64_t>>& shapes) const {
  const onnx::NodeProto& node = *ref.node;
  auto shape = shapes.find(node.input(0));
  if (shape == shapes.end()) return std::nullopt;
  const std::vector<int64_t>& dims = shape->second;
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> axes;
  bool have_axes = false;
  for (const auto& attr : node.attribute()) {
    if (attr.name() == "axes") {
      axes.assign(attr.ints().begin(), attr.ints().end());
      have_axes = true;
    }
  }
  if (!have_axes && node.input_size() > 1 && !node.input(1).empty()) {
    const onnx::TensorProto* constant = ConstantOf(InputValue(ref, 1));
    if (constant == nullptr || constant->data_type() != onnx::TensorProto::INT64) return std::nullopt;
    axes = Int64Values(*constant);
  }
  if (axes.empty()) {
    if (IntAttr(node, "noop_with_empty_axes", 0) != 0) return 1;
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  int64_t count = 1;
  for (int64_t axis : axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || dims[axis] < 0) return std::nullopt;
    count *= dims[axis];
  }
  return count;
}

}  // namespace onnx_amp::paint_internal
