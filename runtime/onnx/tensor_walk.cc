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

// One walk for both constness: kConst walks const messages.
template <bool kConst, typename Visitor>
class Walker {
  template <typename T>
  using Maybe = std::conditional_t<kConst, const T, T>;

 public:
  Walker(const TensorFields& fields, const Visitor& visit) : fields_(fields), visit_(visit), direct_(Direct()) {}

  // Any message: the types read directly by type, the rest by reflection.
  Status Message(Maybe<google::protobuf::Message>& message) {
    const Descriptor* type = message.GetDescriptor();
    if (type == onnx::TensorProto::descriptor()) return visit_(static_cast<Maybe<onnx::TensorProto>&>(message), node_);
    if (type == onnx::GraphProto::descriptor()) return Graph(static_cast<Maybe<onnx::GraphProto>&>(message));
    if (type == onnx::NodeProto::descriptor()) return Node(static_cast<Maybe<onnx::NodeProto>&>(message));
    if (type == onnx::AttributeProto::descriptor()) {
      return Attribute(static_cast<Maybe<onnx::AttributeProto>&>(message));
    }
    return Reflected(message);
  }

 private:
  Status Graph(Maybe<onnx::GraphProto>& graph) {
    if (!direct_.graph) return Reflected(graph);
    using G = onnx::GraphProto;
    for (auto& node : Items(graph, &G::node, &G::mutable_node)) ONNX_AMP_RETURN_IF_ERROR(Node(node));
    for (auto& tensor : Items(graph, &G::initializer, &G::mutable_initializer)) {
      ONNX_AMP_RETURN_IF_ERROR(visit_(tensor, node_));
    }
    for (auto& sparse : Items(graph, &G::sparse_initializer, &G::mutable_sparse_initializer)) {
      ONNX_AMP_RETURN_IF_ERROR(Message(sparse));
    }
    return Status::Ok();
  }

  Status Node(Maybe<onnx::NodeProto>& node) {
    const std::string_view outer = node_;
    node_ = node.name();
    Status status = direct_.node ? Status::Ok() : Reflected(node);
    if (direct_.node) {
      for (auto& attribute : Items(node, &onnx::NodeProto::attribute, &onnx::NodeProto::mutable_attribute)) {
        status = Attribute(attribute);
        if (!status.ok()) break;
      }
    }
    node_ = outer;
    return status;
  }

  Status Attribute(Maybe<onnx::AttributeProto>& attr) {
    if (!direct_.attribute) return Reflected(attr);
    using A = onnx::AttributeProto;
    if (attr.has_t()) ONNX_AMP_RETURN_IF_ERROR(visit_(Items(attr, &A::t, &A::mutable_t), node_));
    if (attr.has_g()) ONNX_AMP_RETURN_IF_ERROR(Graph(Items(attr, &A::g, &A::mutable_g)));
    for (auto& tensor : Items(attr, &A::tensors, &A::mutable_tensors)) ONNX_AMP_RETURN_IF_ERROR(visit_(tensor, node_));
    for (auto& graph : Items(attr, &A::graphs, &A::mutable_graphs)) ONNX_AMP_RETURN_IF_ERROR(Graph(graph));
    if (attr.has_sparse_tensor()) {
      ONNX_AMP_RETURN_IF_ERROR(Message(Items(attr, &A::sparse_tensor, &A::mutable_sparse_tensor)));
    }
    for (auto& sparse : Items(attr, &A::sparse_tensors, &A::mutable_sparse_tensors)) {
      ONNX_AMP_RETURN_IF_ERROR(Message(sparse));
    }
    return Status::Ok();
  }

  Status Reflected(Maybe<google::protobuf::Message>& message) {
    const Reflection* reflection = message.GetReflection();
    for (const FieldDescriptor* field : fields_.at(message.GetDescriptor())) {
      if (field->is_repeated()) {
        const int count = reflection->FieldSize(message, field);
        for (int i = 0; i < count; ++i) {
          if constexpr (kConst) {
            ONNX_AMP_RETURN_IF_ERROR(Message(reflection->GetRepeatedMessage(message, field, i)));
          } else {
            ONNX_AMP_RETURN_IF_ERROR(Message(*reflection->MutableRepeatedMessage(&message, field, i)));
          }
        }
      } else if (!reflection->HasField(message, field)) {
        continue;
      } else if constexpr (kConst) {
        ONNX_AMP_RETURN_IF_ERROR(Message(reflection->GetMessage(message, field)));
      } else {
        ONNX_AMP_RETURN_IF_ERROR(Message(*reflection->MutableMessage(&message, field)));
      }
    }
    return Status::Ok();
  }

  // A field of `owner` as the walk's constness wants it: through `get` for a const walk,
  // `get_mutable` for a mutable one (only asked for a singular field that is set).
  template <typename Owner, typename Proto, typename Field>
  static auto& Items(Owner& owner, const Field& (Proto::*get)() const, Field* (Proto::*get_mutable)()) {
    if constexpr (kConst) {
      return (owner.*get)();
    } else {
      return *(owner.*get_mutable)();
    }
  }

  const TensorFields& fields_;
  const Visitor& visit_;
  const DirectAccess& direct_;
  std::string_view node_;  // the innermost node holding what is being walked
};

}  // namespace

Status ForEachTensor(Message& root, const TensorVisitor& visit) {
  TensorFields local;
  return Walker<false, TensorVisitor>(TensorFieldsFor(root.GetDescriptor(), local), visit).Message(root);
}

Status ForEachTensor(const Message& root, const ConstTensorVisitor& visit) {
  TensorFields local;
  return Walker<true, ConstTensorVisitor>(TensorFieldsFor(root.GetDescriptor(), local), visit).Message(root);
}

std::string DescribeTensor(const onnx::TensorProto& tensor, std::string_view node_name) {
  if (!tensor.name().empty()) return "tensor '" + tensor.name() + "'";
  if (!node_name.empty()) return "tensor in node '" + std::string(node_name) + "'";
  return "unnamed tensor";
}

}  // namespace onnx_amp
