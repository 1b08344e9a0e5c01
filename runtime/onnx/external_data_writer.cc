#include "runtime/onnx/external_data_writer.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

namespace onnx_amp {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

struct ExternalSlot {
  size_t offset = 0;
  size_t length = 0;
};

// What to move: the tensors, where their bytes went, and every message that holds one of
// them (those are copied field by field; all others are copied whole).
struct MovePlan {
  std::vector<const onnx::TensorProto*> tensors;
  std::unordered_map<const Message*, ExternalSlot> slots;
  std::unordered_set<const Message*> holders;
};

bool IsTensor(const Message& message) { return message.GetDescriptor() == onnx::TensorProto::descriptor(); }

// Returns true when `message` is or holds a tensor to move.
bool Collect(const Message& message, size_t threshold_bytes, MovePlan& plan) {
  if (IsTensor(message)) {
    const auto& tensor = static_cast<const onnx::TensorProto&>(message);
    if (!tensor.has_raw_data() || tensor.raw_data().size() < threshold_bytes) return false;
    plan.tensors.push_back(&tensor);
    return true;
  }
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  bool holds = false;
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      for (int i = 0; i < count; ++i) {
        holds = Collect(reflection->GetRepeatedMessage(message, field, i), threshold_bytes, plan) || holds;
      }
    } else {
      holds = Collect(reflection->GetMessage(message, field), threshold_bytes, plan) || holds;
    }
  }
  if (holds) plan.holders.insert(&message);
  return holds;
}

size_t AlignmentFor(size_t length) {
  return length >= kExternalPageAlignThreshold ? kExternalPageAlignment : kExternalSmallAlignment;
}

Status WriteData(MovePlan& plan, AtomicFileWriter& data_file) {
  for (const onnx::TensorProto* tensor : plan.tensors) {
    const std::string& bytes = tensor->raw_data();
    const size_t alignment = AlignmentFor(bytes.size());
    const size_t padding = (alignment - data_file.size() % alignment) % alignment;
    ONNX_AMP_RETURN_IF_ERROR(data_file.WriteZeros(padding));
    plan.slots[tensor] = ExternalSlot{data_file.size(), bytes.size()};
    ONNX_AMP_RETURN_IF_ERROR(data_file.Write(bytes.data(), bytes.size()));
  }
  return Status::Ok();
}

// Copies one non-message field (singular or repeated).
void CopyValueField(const Message& src, Message* dst, const FieldDescriptor* field) {
  const Reflection* from = src.GetReflection();
  const Reflection* to = dst->GetReflection();
  const bool rep = field->is_repeated();
  const int count = rep ? from->FieldSize(src, field) : 1;
  for (int i = 0; i < count; ++i) {
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        const int32_t v = rep ? from->GetRepeatedInt32(src, field, i) : from->GetInt32(src, field);
        rep ? to->AddInt32(dst, field, v) : to->SetInt32(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        const int64_t v = rep ? from->GetRepeatedInt64(src, field, i) : from->GetInt64(src, field);
        rep ? to->AddInt64(dst, field, v) : to->SetInt64(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        const uint32_t v = rep ? from->GetRepeatedUInt32(src, field, i) : from->GetUInt32(src, field);
        rep ? to->AddUInt32(dst, field, v) : to->SetUInt32(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        const uint64_t v = rep ? from->GetRepeatedUInt64(src, field, i) : from->GetUInt64(src, field);
        rep ? to->AddUInt64(dst, field, v) : to->SetUInt64(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        const double v = rep ? from->GetRepeatedDouble(src, field, i) : from->GetDouble(src, field);
        rep ? to->AddDouble(dst, field, v) : to->SetDouble(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        const float v = rep ? from->GetRepeatedFloat(src, field, i) : from->GetFloat(src, field);
        rep ? to->AddFloat(dst, field, v) : to->SetFloat(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        const bool v = rep ? from->GetRepeatedBool(src, field, i) : from->GetBool(src, field);
        rep ? to->AddBool(dst, field, v) : to->SetBool(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const int v = rep ? from->GetRepeatedEnumValue(src, field, i) : from->GetEnumValue(src, field);
        rep ? to->AddEnumValue(dst, field, v) : to->SetEnumValue(dst, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string v = rep ? from->GetRepeatedString(src, field, i) : from->GetString(src, field);
        rep ? to->AddString(dst, field, std::move(v)) : to->SetString(dst, field, std::move(v));
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        ONNX_AMP_ASSERT(false, "message fields are copied by CopyWithoutMoved");
        break;
    }
  }
}

// Copies src into dst, leaving out the raw_data of moved tensors and pointing those
// tensors at the data file instead.
void CopyWithoutMoved(const Message& src, Message* dst, const MovePlan& plan, const std::string& location) {
  const auto slot = plan.slots.find(&src);
  if (slot == plan.slots.end() && !plan.holders.contains(&src)) {
    dst->CopyFrom(src);
    return;
  }
  const Reflection* reflection = src.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(src, &fields);
  for (const FieldDescriptor* field : fields) {
    if (slot != plan.slots.end() && field->number() == onnx::TensorProto::kRawDataFieldNumber) continue;
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      CopyValueField(src, dst, field);
    } else if (field->is_repeated()) {
      const int count = reflection->FieldSize(src, field);
      for (int i = 0; i < count; ++i) {
        CopyWithoutMoved(reflection->GetRepeatedMessage(src, field, i), dst->GetReflection()->AddMessage(dst, field),
                         plan, location);
      }
    } else {
      CopyWithoutMoved(reflection->GetMessage(src, field), dst->GetReflection()->MutableMessage(dst, field), plan,
                       location);
    }
  }
  dst->GetReflection()->MutableUnknownFields(dst)->MergeFrom(reflection->GetUnknownFields(src));
  if (slot == plan.slots.end()) return;
  auto* tensor = static_cast<onnx::TensorProto*>(dst);
  tensor->clear_external_data();
  const std::pair<const char*, std::string> entries[] = {
      {"location", location},
      {"offset", std::to_string(slot->second.offset)},
      {"length", std::to_string(slot->second.length)},
  };
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  tensor->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
}

}  // namespace

Expected<ExternalizedModel> ExternalizeTensors(const onnx::ModelProto& model, size_t threshold_bytes,
                                               const std::string& location, AtomicFileWriter& data_file) {
  MovePlan plan;
  Collect(model, threshold_bytes, plan);
  ONNX_AMP_RETURN_IF_ERROR(WriteData(plan, data_file));
  ExternalizedModel result;
  CopyWithoutMoved(model, &result.model, plan, location);
  result.moved_count = plan.tensors.size();
  return result;
}

}  // namespace onnx_amp
