#include "runtime/onnx/tensor_walk.h"

#include <algorithm>
#include <initializer_list>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace onnx_amp {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// For each message type, the message fields through which a TensorProto can be reached.
// The walk skips what cannot hold a tensor (value_info and its types, metadata):
// listing every field of every message by reflection cost more than the rest of a
// conversion.
using TensorFields = std::unordered_map<const Descriptor*, std::vector<const FieldDescriptor*>>;

// The fields of `root` and of every message type reachable from it. A type reaches a
// tensor when one of its fields is a TensorProto or reaches one; the graph, node and
// attribute types refer to each other, so this iterates to a fixed point.
TensorFields FindTensorFields(const Descriptor* root) {
  std::vector<const Descriptor*> types = {root};
  std::unordered_map<const Descriptor*, bool> reaches = {{root, root == onnx::TensorProto::descriptor()}};
  for (size_t t = 0; t < types.size(); ++t) {
    for (int f = 0; f < types[t]->field_count(); ++f) {
      const Descriptor* type = types[t]->field(f)->message_type();
      if (type != nullptr && reaches.emplace(type, type == onnx::TensorProto::descriptor()).second) {
        types.push_back(type);
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Descriptor* type : types) {
      for (int f = 0; f < type->field_count() && !reaches[type]; ++f) {
        const Descriptor* field_type = type->field(f)->message_type();
        if (field_type != nullptr && reaches[field_type]) changed = reaches[type] = true;
      }
    }
  }
  TensorFields fields;
  for (const Descriptor* type : types) {
    std::vector<const FieldDescriptor*>& list = fields[type];
    for (int f = 0; f < type->field_count(); ++f) {
      const Descriptor* field_type = type->field(f)->message_type();
      if (field_type != nullptr && reaches[field_type]) list.push_back(type->field(f));
    }
    // Field-number order, as protobuf lists set fields.
    std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return a->number() < b->number(); });
  }
  return fields;
}

// The fields for a walk from `root`: those of onnx.proto's types, found once, or for a
// root outside them, found into `local`.
const TensorFields& TensorFieldsFor(const Descriptor* root, TensorFields& local) {
  static const TensorFields model_fields = FindTensorFields(onnx::ModelProto::descriptor());
  if (model_fields.count(root)) return model_fields;
  local = FindTensorFields(root);
  return local;
}

// Whether `type`'s tensor-holding fields are exactly `names`, in that order.
bool FieldsAre(const TensorFields& fields, const Descriptor* type, std::initializer_list<std::string_view> names) {
  auto it = fields.find(type);
  return it != fields.end() && std::equal(it->second.begin(), it->second.end(), names.begin(), names.end(),
                                          [](const FieldDescriptor* field, std::string_view name) {
                                            return field->name() == name;
                                          });
}

// Graphs, nodes and attributes, met once per node, are read through their generated
// accessors when onnx.proto gives them the tensor-holding fields this code knows (the
// descriptors say so, once); anything else goes by reflection.
struct DirectAccess {
  bool graph = false;
  bool node = false;
  bool attribute = false;
};

const DirectAccess& Direct() {
  static const DirectAccess direct = [] {
    TensorFields local;
    const TensorFields& fields = TensorFieldsFor(onnx::ModelProto::descriptor(), local);
    DirectAccess access;
    access.graph = FieldsAre(fields, onnx::GraphProto::descriptor(), {"node", "initializer", "sparse_initializer"});
    access.node = FieldsAre(fields, onnx::NodeProto::descriptor(), {"attribute"});
    access.attribute = FieldsAre(fields, onnx::AttributeProto::descriptor(),
                                 {"t", "g", "tensors", "graphs", "sparse_tensor", "sparse_tensors"});
    return access;
  }();
  return direct;
}

template <typename MessageT, typename Visitor>
Status Walk(MessageT& message, std::string_view node_name, const TensorFields& fields, const Visitor& visit);

// `message` read through its generated accessors (Direct()); false when it is not one
// of those types.
template <typename MessageT, typename Visitor>
bool WalkDirect(MessageT& message, std::string_view node_name, const TensorFields& fields, const Visitor& visit,
                Status& status) {
  constexpr bool kConst = std::is_const_v<MessageT>;
  auto each = [&](auto& repeated) {
    for (auto& item : repeated) {
      if (status.ok()) status = Walk(static_cast<MessageT&>(item), node_name, fields, visit);
    }
  };
  auto one = [&](bool present, auto& item) {
    if (present && status.ok()) status = Walk(static_cast<MessageT&>(item), node_name, fields, visit);
  };
  const Descriptor* type = message.GetDescriptor();
  if (type == onnx::GraphProto::descriptor() && Direct().graph) {
    auto& graph = static_cast<std::conditional_t<kConst, const onnx::GraphProto, onnx::GraphProto>&>(message);
    if constexpr (kConst) {
      each(graph.node()), each(graph.initializer()), each(graph.sparse_initializer());
    } else {
      each(*graph.mutable_node()), each(*graph.mutable_initializer()), each(*graph.mutable_sparse_initializer());
    }
    return true;
  }
  if (type == onnx::NodeProto::descriptor() && Direct().node) {
    auto& node = static_cast<std::conditional_t<kConst, const onnx::NodeProto, onnx::NodeProto>&>(message);
    node_name = node.name();
    if constexpr (kConst) {
      each(node.attribute());
    } else {
      each(*node.mutable_attribute());
    }
    return true;
  }
  if (type == onnx::AttributeProto::descriptor() && Direct().attribute) {
    auto& attr = static_cast<std::conditional_t<kConst, const onnx::AttributeProto, onnx::AttributeProto>&>(message);
    if constexpr (kConst) {
      one(attr.has_t(), attr.t()), one(attr.has_g(), attr.g()), each(attr.tensors()), each(attr.graphs());
      one(attr.has_sparse_tensor(), attr.sparse_tensor()), each(attr.sparse_tensors());
    } else {
      if (attr.has_t()) one(true, *attr.mutable_t());
      if (attr.has_g()) one(true, *attr.mutable_g());
      each(*attr.mutable_tensors()), each(*attr.mutable_graphs());
      if (attr.has_sparse_tensor()) one(true, *attr.mutable_sparse_tensor());
      each(*attr.mutable_sparse_tensors());
    }
    return true;
  }
  return false;
}

// One walk for both constness: MessageT is a message type or its const form.
template <typename MessageT, typename Visitor>
Status Walk(MessageT& message, std::string_view node_name, const TensorFields& fields, const Visitor& visit) {
  using TensorT = std::conditional_t<std::is_const_v<MessageT>, const onnx::TensorProto, onnx::TensorProto>;
  using NodeT = std::conditional_t<std::is_const_v<MessageT>, const onnx::NodeProto, onnx::NodeProto>;
  const Descriptor* type = message.GetDescriptor();
  if (type == onnx::TensorProto::descriptor()) return visit(static_cast<TensorT&>(message), node_name);
  Status status;
  if (WalkDirect(message, node_name, fields, visit, status)) return status;
  if (type == onnx::NodeProto::descriptor()) node_name = static_cast<NodeT&>(message).name();
  const Reflection* reflection = message.GetReflection();
  for (const FieldDescriptor* field : fields.at(type)) {
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      for (int i = 0; i < count; ++i) {
        if constexpr (std::is_const_v<MessageT>) {
          ONNX_AMP_RETURN_IF_ERROR(Walk(reflection->GetRepeatedMessage(message, field, i), node_name, fields, visit));
        } else {
          ONNX_AMP_RETURN_IF_ERROR(
              Walk(*reflection->MutableRepeatedMessage(&message, field, i), node_name, fields, visit));
        }
      }
    } else if (!reflection->HasField(message, field)) {
      continue;
    } else if constexpr (std::is_const_v<MessageT>) {
      ONNX_AMP_RETURN_IF_ERROR(Walk(reflection->GetMessage(message, field), node_name, fields, visit));
    } else {
      ONNX_AMP_RETURN_IF_ERROR(Walk(*reflection->MutableMessage(&message, field), node_name, fields, visit));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ForEachTensor(Message& root, const TensorVisitor& visit) {
  TensorFields local;
  return Walk(root, "", TensorFieldsFor(root.GetDescriptor(), local), visit);
}

Status ForEachTensor(const Message& root, const ConstTensorVisitor& visit) {
  TensorFields local;
  return Walk(root, "", TensorFieldsFor(root.GetDescriptor(), local), visit);
}

std::string DescribeTensor(const onnx::TensorProto& tensor, std::string_view node_name) {
  if (!tensor.name().empty()) return "tensor '" + tensor.name() + "'";
  if (!node_name.empty()) return "tensor in node '" + std::string(node_name) + "'";
  return "unnamed tensor";
}

}  // namespace onnx_amp
