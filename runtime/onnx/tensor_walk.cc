#include "runtime/onnx/tensor_walk.h"

#include <type_traits>
#include <vector>

namespace onnx_amp {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// One walk for both constness: MessageT is Message or const Message.
template <typename MessageT, typename Visitor>
Status Walk(MessageT& message, std::string_view node_name, const Visitor& visit) {
  using TensorT = std::conditional_t<std::is_const_v<MessageT>, const onnx::TensorProto, onnx::TensorProto>;
  using NodeT = std::conditional_t<std::is_const_v<MessageT>, const onnx::NodeProto, onnx::NodeProto>;
  if (message.GetDescriptor() == onnx::TensorProto::descriptor()) {
    return visit(static_cast<TensorT&>(message), node_name);
  }
  if (message.GetDescriptor() == onnx::NodeProto::descriptor()) {
    node_name = static_cast<NodeT&>(message).name();
  }
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      for (int i = 0; i < count; ++i) {
        if constexpr (std::is_const_v<MessageT>) {
          ONNX_AMP_RETURN_IF_ERROR(Walk(reflection->GetRepeatedMessage(message, field, i), node_name, visit));
        } else {
          ONNX_AMP_RETURN_IF_ERROR(Walk(*reflection->MutableRepeatedMessage(&message, field, i), node_name, visit));
        }
      }
    } else if constexpr (std::is_const_v<MessageT>) {
      ONNX_AMP_RETURN_IF_ERROR(Walk(reflection->GetMessage(message, field), node_name, visit));
    } else {
      ONNX_AMP_RETURN_IF_ERROR(Walk(*reflection->MutableMessage(&message, field), node_name, visit));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ForEachTensor(Message& root, const TensorVisitor& visit) { return Walk(root, "", visit); }

Status ForEachTensor(const Message& root, const ConstTensorVisitor& visit) { return Walk(root, "", visit); }

std::string DescribeTensor(const onnx::TensorProto& tensor, std::string_view node_name) {
  if (!tensor.name().empty()) return "tensor '" + tensor.name() + "'";
  if (!node_name.empty()) return "tensor in node '" + std::string(node_name) + "'";
  return "unnamed tensor";
}

}  // namespace onnx_amp
