#include "converter/opset_upgrade.h"

#include <algorithm>
#include <exception>
#include <map>
#include <unordered_map>
#include <utility>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include "runtime/onnx/schema_types.h"
#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/folder_checks.h"
#include "runtime/onnx/onnx_checks.h"
#include "runtime/onnx/tensor_walk.h"

namespace onnx_amp {
namespace {

// The newest default-domain opset this ONNX build (schemas and version converter) knows.
int64_t NewestOpset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(std::string(kOnnxDomain)).second;
}

// Newest opset first, then most nodes first.
void SortNeeds(std::vector<OpsetNeed>& needs) {
  std::stable_sort(needs.begin(), needs.end(), [](const OpsetNeed& a, const OpsetNeed& b) {
    if (a.opset != b.opset) return a.opset > b.opset;
    return a.nodes != b.nodes ? a.nodes > b.nodes : a.op < b.op;
  });
}

const std::vector<onnx::OpSchema::TypeConstraintParam> kNoConstraints;

// The inputs and outputs of one node bound to one type variable.
struct Members {
  std::vector<int> inputs;
  std::vector<int> outputs;
};

bool AllAdmit(const onnx::OpSchema& schema, const Members& members, DType dtype) {
  auto admits = [&](FormalSide side, int index) {
    const std::optional<FormalType> formal = FormalTypeOf(schema, side, index);
    return formal && AdmitsDType(*formal->allowed, dtype);
  };
  return std::all_of(members.inputs.begin(), members.inputs.end(),
                     [&](int i) { return admits(FormalSide::kInput, i); }) &&
         std::all_of(members.outputs.begin(), members.outputs.end(),
                     [&](int o) { return admits(FormalSide::kOutput, o); });
}

class NeedFinder {
 public:
  NeedFinder(const ValueTable& types, const PrecisionPolicy& policy, int64_t opset)
      : types_(types), policy_(policy), low_type_(policy.LowType()), opset_(opset), newest_(NewestOpset()) {}

  void VisitGraph(const onnx::GraphProto& graph) {
    for (const onnx::NodeProto& node : graph.node()) {
      VisitNode(node);
      for (const onnx::AttributeProto& attr : node.attribute()) {
        if (attr.has_g()) VisitGraph(attr.g());
        for (const onnx::GraphProto& sub : attr.graphs()) VisitGraph(sub);
      }
    }
  }

  std::vector<OpsetNeed> Needs() const {
    std::vector<OpsetNeed> needs;
    for (const auto& [key, nodes] : nodes_) needs.push_back({key.second, key.first, nodes});
    SortNeeds(needs);
    return needs;
  }

 private:
  void VisitNode(const onnx::NodeProto& node) {
    if (!IsOnnxDomain(node.domain())) return;  // the version converter changes the default domain only
    const onnx::OpSchema* schema = SchemaLackingLowType(node.op_type());
    if (schema == nullptr) return;

    // The node's values bound to type variables that admit float32 but not the low dtype.
    std::map<std::string, Members> groups;
    auto lacking = [&](FormalSide side, int index) -> std::optional<std::string> {
      const std::optional<FormalType> formal = FormalTypeOf(*schema, side, index);
      if (!formal || !LacksLowType(*formal->allowed)) return std::nullopt;
      return formal->variable;
    };
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;
      if (auto variable = lacking(FormalSide::kInput, i)) groups[*variable].inputs.push_back(i);
    }
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty()) continue;
      if (auto variable = lacking(FormalSide::kOutput, o)) groups[*variable].outputs.push_back(o);
    }
    if (groups.empty()) return;
    const PrecisionClass precision_class = policy_.ClassOf(node.domain(), node.op_type(), node.name()).precision_class;
    if (precision_class == PrecisionClass::kFixedFp32 || precision_class == PrecisionClass::kDeny) return;

    const OpPrecisionDef* def = FindOpPrecision(node.domain(), node.op_type());
    const uint32_t fixed_inputs = def ? def->fixed_fp32_inputs : 0;
    int64_t needed = 0;
    for (auto& [variable, members] : groups) {
      if (!AllFloat32(node, members)) continue;
      // An input ops.def keeps float32 takes its variable's other values with it (Paint).
      const size_t size = members.inputs.size() + members.outputs.size();
      const auto fixed = [&](int i) { return i < 32 && (fixed_inputs & InputBit(i)) != 0; };
      if (std::any_of(members.inputs.begin(), members.inputs.end(), fixed) && size > 1) continue;
      std::erase_if(members.inputs, fixed);
      if (members.inputs.empty() && members.outputs.empty()) continue;
      if (const std::optional<int64_t> first = FirstAdmittingOpset(node.op_type(), members)) {
        needed = std::max(needed, *first);
      }
    }
    if (needed > 0) ++nodes_[{needed, node.op_type()}];
  }

  bool LacksLowType(const std::vector<std::string>& allowed) const {
    return AdmitsDType(allowed, DType::kFloat32) && !AdmitsDType(allowed, low_type_);
  }

  // The schema of `op` at the model opset when one of its type variables admits float32
  // but not the low dtype; nullptr otherwise (then no node of `op` needs a newer opset).
  // Once per op type: most ops admit both, and their nodes cost one lookup.
  const onnx::OpSchema* SchemaLackingLowType(const std::string& op) {
    auto cached = lacking_.find(op);
    if (cached != lacking_.end()) return cached->second;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset_));
    const auto& constraints = schema != nullptr ? schema->typeConstraintParams() : kNoConstraints;
    const bool lacks = std::any_of(constraints.begin(), constraints.end(),
                                   [&](const auto& constraint) { return LacksLowType(constraint.allowed_type_strs); });
    return lacking_.emplace(op, lacks ? schema : nullptr).first->second;
  }

  bool AllFloat32(const onnx::NodeProto& node, const Members& members) const {
    auto float32 = [&](const std::string& name) {
      return types_.TypeOf(name) == DType::kFloat32;
    };
    return std::all_of(members.inputs.begin(), members.inputs.end(), [&](int i) { return float32(node.input(i)); }) &&
           std::all_of(members.outputs.begin(), members.outputs.end(), [&](int o) { return float32(node.output(o)); });
  }

  // The first opset after the model's whose schema for `op` admits the low dtype for all
  // of `members`; nullopt when none up to the newest does (or the op is removed first).
  std::optional<int64_t> FirstAdmittingOpset(const std::string& op, const Members& members) {
    std::string key = op;
    for (int i : members.inputs) key += " i" + std::to_string(i);
    for (int o : members.outputs) key += " o" + std::to_string(o);
    auto cached = first_admitting_.find(key);
    if (cached != first_admitting_.end()) return cached->second;
    std::optional<int64_t> first;
    for (int64_t opset = opset_ + 1; opset <= newest_ && !first; ++opset) {
      const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset));
      if (schema == nullptr || schema->Deprecated()) break;
      if (AllAdmit(*schema, members, low_type_)) first = opset;
    }
    first_admitting_.emplace(std::move(key), first);
    return first;
  }

  const ValueTable& types_;
  const PrecisionPolicy& policy_;
  const DType low_type_;
  const int64_t opset_;
  const int64_t newest_;
  std::map<std::pair<int64_t, std::string>, int64_t> nodes_;  // (opset, op) -> nodes
  std::unordered_map<std::string, std::optional<int64_t>> first_admitting_;
  std::unordered_map<std::string, const onnx::OpSchema*> lacking_;
};

// Tensors left in their external files, by name, without data: the version converter
// would turn each into an empty tensor without its file reference.
Expected<std::unordered_map<std::string, onnx::TensorProto>> ExternalTensors(const onnx::ModelProto& model) {
  std::unordered_map<std::string, onnx::TensorProto> external;
  const auto collect = [&](const onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return Status::Ok();
    if (!node_name.empty() || tensor.name().empty() || external.count(tensor.name())) {
      return InvalidArgument("the external " + DescribeTensor(tensor, node_name) +
                             " is not a uniquely named initializer, which the version converter cannot carry");
    }
    external.emplace(tensor.name(), tensor);
    return Status::Ok();
  };
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(model, collect));
  return external;
}

// Gives the converted model's initializers their file references back.
Status RestoreExternalTensors(const std::unordered_map<std::string, onnx::TensorProto>& external,
                              onnx::ModelProto& converted) {
  size_t restored = 0;
  const auto restore = [&](onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    auto it = external.find(tensor.name());
    if (!node_name.empty() || it == external.end()) return Status::Ok();
    const onnx::TensorProto& original = it->second;
    if (tensor.data_type() != original.data_type() ||
        !std::equal(tensor.dims().begin(), tensor.dims().end(), original.dims().begin(), original.dims().end())) {
      return InvalidArgument("the version converter changed the external tensor '" + tensor.name() + "'");
    }
    tensor.clear_raw_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    *tensor.mutable_external_data() = original.external_data();
    ++restored;
    return Status::Ok();
  };
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(converted, restore));
  if (restored != external.size()) return InvalidArgument("the version converter dropped an external tensor");
  return Status::Ok();
}

struct RaisedModel {
  onnx::ModelProto model;
  ValueTable types;
};

// `model` at `opset`, checked and typed. The version converter can write models that
// the checker or strict inference rejects (Resize-11's empty scales next to sizes are
// "both given" from Resize-13 on); such a model is not used, since the converted
// model must pass both (ConvertModel's verification).
Expected<RaisedModel> Raise(const onnx::ModelProto& model, int64_t opset, const std::filesystem::path& folder) {
  RaisedModel raised;
  ONNX_AMP_ASSIGN_OR_RETURN(raised.model, ChangeOpset(model, opset));
  const std::string context = "the model converted to opset " + std::to_string(opset);
  Status checked =
      folder.empty() ? CheckModel(raised.model, /*full_check=*/false) : CheckModelInFolder(raised.model, folder);
  if (checked.ok()) checked = InspectInferred(raised.model, /*strict=*/true, nullptr);
  if (!checked.ok()) return checked.WithContext(context);
  Expected<ValueTable> types = InferValueTypes(raised.model);
  if (!types.ok()) return types.status().WithContext(context);
  raised.types = std::move(*types);
  return raised;
}

// `message` on one line, for a summary line: ONNX's errors can span several.
std::string OneLine(const std::string& message) {
  std::string line;
  for (char c : message) {
    if (c != '\n' && c != '\r') {
      line += c;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// "Conv, MaxPool" for the needs at `opset`.
std::string OpsNeeding(const std::vector<OpsetNeed>& needs, int64_t opset, size_t* count = nullptr) {
  std::string ops;
  size_t n = 0;
  for (const OpsetNeed& need : needs) {
    if (need.opset != opset) continue;
    ops += (n++ == 0 ? "" : ", ") + need.op;
  }
  if (count != nullptr) *count = n;
  return ops;
}

// The distinct opsets newer than `opset` that the needs name, newest first.
std::vector<int64_t> NeededOpsets(const std::vector<OpsetNeed>& needs, int64_t opset) {
  std::vector<int64_t> opsets;
  for (const OpsetNeed& need : needs) {
    if (need.opset > opset && (opsets.empty() || opsets.back() != need.opset)) opsets.push_back(need.opset);
  }
  return opsets;
}

// "29 nodes stayed float32: their ops accept bfloat16 only from opset 22 (Conv, MaxPool)"
std::string DescribeStayedFloat32(const OpsetDecision& decision) {
  const int64_t nodes = decision.NodesBelowNeededOpset();
  std::string text = std::to_string(nodes) + (nodes == 1 ? " node stayed float32: its op accepts "
                                                          : " nodes stayed float32: their ops accept ") +
                     std::string(DTypeName(decision.low_type)) + " only from ";
  const std::vector<int64_t> opsets = NeededOpsets(decision.needs, decision.to);
  for (size_t k = 0; k < opsets.size(); ++k) {
    text += (k == 0 ? "opset " : " or opset ") + std::to_string(opsets[k]) + " (" +
            OpsNeeding(decision.needs, opsets[k]) + ")";
  }
  return text;
}

}  // namespace

std::string_view OpsetActionName(OpsetAction action) {
  switch (action) {
    case OpsetAction::kKept: return "kept";
    case OpsetAction::kRaised: return "raised";
    case OpsetAction::kPinned: return "pinned";
    case OpsetAction::kKeptByRequest: return "kept_by_request";
    case OpsetAction::kKeptOnFailure: return "kept_on_failure";
  }
  return "?";
}

int64_t OpsetDecision::NodesBelowNeededOpset() const {
  int64_t nodes = 0;
  for (const OpsetNeed& need : needs) {
    if (need.opset > to) nodes += need.nodes;
  }
  return nodes;
}

std::string DescribeOpsetDecision(const OpsetDecision& decision) {
  const std::string from = "opset " + std::to_string(decision.from);
  switch (decision.action) {
    case OpsetAction::kKept: return "";
    case OpsetAction::kRaised: {
      std::string text = from + " -> " + std::to_string(decision.to) + " (" + std::string(DTypeName(decision.low_type));
      // Each op once, under the newest opset it needed (needs are sorted newest first).
      std::vector<OpsetNeed> newest;
      for (const OpsetNeed& need : decision.needs) {
        const auto same_op = [&](const OpsetNeed& seen) { return seen.op == need.op; };
        if (need.opset <= decision.to && std::none_of(newest.begin(), newest.end(), same_op)) newest.push_back(need);
      }
      const std::vector<int64_t> opsets = NeededOpsets(newest, decision.from);
      for (size_t k = 0; k < opsets.size(); ++k) {
        size_t ops = 0;
        const std::string names = OpsNeeding(newest, opsets[k], &ops);
        text += (k == 0 ? " " : "; ") + names + (ops == 1 ? " needs" : " need") + " opset " + std::to_string(opsets[k]);
      }
      text += ")";
      // A later raise failed: say why, and what stayed float32.
      if (!decision.failure.empty()) text += "; " + decision.failure + "; " + DescribeStayedFloat32(decision);
      return text;
    }
    case OpsetAction::kPinned: {
      std::string text = from + (decision.to == decision.from ? "" : " -> " + std::to_string(decision.to)) +
                         " (pinned by --opset)";
      if (decision.NodesBelowNeededOpset() > 0) text += "; " + DescribeStayedFloat32(decision);
      return text;
    }
    case OpsetAction::kKeptByRequest:
      return DescribeStayedFloat32(decision) + " (drop --keep-opset to raise the opset)";
    case OpsetAction::kKeptOnFailure:
      return from + " kept: " + decision.failure + "; " + DescribeStayedFloat32(decision);
  }
  return "";
}

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (IsOnnxDomain(opset.domain())) return opset.version();
  }
  return 0;
}

std::vector<OpsetNeed> FindOpsetNeeds(const onnx::ModelProto& model, const ValueTable& types,
                                      const PrecisionPolicy& policy, ConvertTarget target) {
  // The onnx-amp target admits any float dtype anywhere; without a low dtype, or without
  // fast arithmetic in it, nothing runs low.
  if (target != ConvertTarget::kPortable || !IsLowPrecision(policy.LowType()) ||
      !HasFastArithmetic(policy.hardware, policy.LowType())) {
    return {};
  }
  const int64_t opset = DefaultOpset(model);
  if (opset == 0) return {};
  NeedFinder finder(types, policy, opset);
  finder.VisitGraph(model.graph());
  return finder.Needs();
}

Expected<onnx::ModelProto> ChangeOpset(const onnx::ModelProto& model, int64_t opset) {
  const int64_t current = DefaultOpset(model);
  const std::string cannot = "ONNX's version converter cannot take the model from opset " + std::to_string(current) +
                             " to " + std::to_string(opset);
  if (current == 0) return InvalidArgument("the model imports no default-domain (ai.onnx) opset to change");
  // It would drop them silently.
  if (model.functions_size() > 0) return InvalidArgument(cannot + ": it would drop the model-local functions");
  if (model.training_info_size() > 0) return InvalidArgument(cannot + ": it would drop the training info");
  Expected<std::unordered_map<std::string, onnx::TensorProto>> external = ExternalTensors(model);
  if (!external.ok()) return external.status().WithContext(cannot);
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(model, static_cast<int>(opset));
  } catch (const std::exception& e) {
    return InvalidArgument(cannot + ": " + e.what());
  }
  Status restored = RestoreExternalTensors(*external, converted);
  if (!restored.ok()) return restored.WithContext(cannot);
  return converted;
}

Expected<SettledOpset> SettleOpset(onnx::ModelProto& model, const OpsetRequest& request, const PrecisionPolicy& policy,
                                   ConvertTarget target, const std::filesystem::path& external_data_folder,
                                   std::optional<Expected<ValueTable>> inferred) {
  if (request.pin && request.keep) {
    return InvalidArgument("--keep-opset: conflicts with --opset " + std::to_string(*request.pin) +
                           " (keep the model's opset, or pin one)");
  }
  SettledOpset settled;
  OpsetDecision& decision = settled.decision;
  decision.from = DefaultOpset(model);
  decision.low_type = policy.LowType();
  if (request.pin) {
    decision.action = OpsetAction::kPinned;
    if (*request.pin != decision.from) {
      Expected<onnx::ModelProto> pinned = ChangeOpset(model, *request.pin);
      if (!pinned.ok()) return pinned.status().WithContext("--opset " + std::to_string(*request.pin));
      model = std::move(*pinned);
      inferred.reset();  // of the model before the change
    }
  }
  decision.to = DefaultOpset(model);
  if (!inferred) inferred = InferValueTypes(model);
  ONNX_AMP_ASSIGN_OR_RETURN(settled.types, std::move(*inferred));
  decision.needs = FindOpsetNeeds(model, settled.types, policy, target);
  if (request.pin || decision.needs.empty()) return settled;
  if (request.keep) {
    decision.action = OpsetAction::kKeptByRequest;
    return settled;
  }
  // Adapters can change nodes (Dropout-12 gains a float ratio input, which bfloat16
  // admits only from Dropout-22), so the needs are found again at each raised opset
  // until none is left; the output then converts again to itself.
  for (std::vector<OpsetNeed> needs = decision.needs; !needs.empty();) {
    const int64_t wanted = needs.front().opset;
    Expected<RaisedModel> raised = Raise(model, wanted, external_data_folder);
    if (!raised.ok()) {
      decision.action = decision.to == decision.from ? OpsetAction::kKeptOnFailure : OpsetAction::kRaised;
      decision.failure = OneLine(raised.status().message());
      break;
    }
    if (!settled.unraised) settled.unraised = std::move(model);
    model = std::move(raised->model);
    settled.types = std::move(raised->types);
    decision.action = OpsetAction::kRaised;
    decision.to = wanted;
    needs = FindOpsetNeeds(model, settled.types, policy, target);
    decision.needs.insert(decision.needs.end(), needs.begin(), needs.end());
  }
  SortNeeds(decision.needs);
  return settled;
}

Expected<SettledOpset> SettleAfterFailedRaise(onnx::ModelProto& unraised, int64_t raised_to, const Status& failure,
                                              const PrecisionPolicy& policy, ConvertTarget target) {
  // Kept, so nothing is converted and no external data folder is needed.
  const OpsetRequest keep{std::nullopt, /*keep=*/true};
  ONNX_AMP_ASSIGN_OR_RETURN(SettledOpset settled, SettleOpset(unraised, keep, policy, target, {}));
  settled.decision.action = OpsetAction::kKeptOnFailure;
  settled.decision.failure =
      OneLine("the model converted to opset " + std::to_string(raised_to) + " failed: " + failure.message());
  return settled;
}

}  // namespace onnx_amp
