// A structure-aware mutator for the fuzz targets whose input is an ONNX ModelProto:
// instead of flipping bytes (which mostly breaks the protobuf encoding), it parses the
// model, changes one field found by reflection and serializes it again. Changes: an
// integer set to an edge value (0, -1, 1, the type's limits, off by one), a float to
// NaN/inf/0/huge, a string to another name of the same model or an op type, an enum to
// another value, an element of a repeated field dropped, duplicated or swapped, a message
// cleared. Inputs that do not parse fall back to libFuzzer's byte mutations, as do one in
// four calls, and all of them when ONNX_AMP_FUZZ_BYTE_MUTATIONS is set (to compare).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <onnx/onnx_pb.h>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

const char* const kOpTypes[] = {"Add", "MatMul", "Gemm", "Conv", "Relu", "Softmax", "Cast", "Reshape", "If", "Loop",
                                "Scan", "Concat", "Gather", "Slice", "LayerNormalization", "ReduceSum", "Constant",
                                "ConstantOfShape", "Expand", "Identity", "Transpose", "Split", "BatchNormalization"};

struct FieldRef {
  Message* message;
  const FieldDescriptor* field;
};

// Every set field of every message under `message`.
void CollectFields(Message* message, std::vector<FieldRef>& fields, std::vector<std::string>& strings) {
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> set;
  reflection->ListFields(*message, &set);
  for (const FieldDescriptor* field : set) {
    fields.push_back({message, field});
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING && field->type() != FieldDescriptor::TYPE_BYTES) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          strings.push_back(reflection->GetRepeatedString(*message, field, i));
        }
      } else {
        strings.push_back(reflection->GetString(*message, field));
      }
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        CollectFields(reflection->MutableRepeatedMessage(message, field, i), fields, strings);
      }
    } else {
      CollectFields(reflection->MutableMessage(message, field), fields, strings);
    }
  }
}

int64_t EdgeInteger(std::mt19937& rng, int64_t current, int64_t lo, int64_t hi) {
  const int64_t choices[] = {0, -1, 1, 2, lo, hi, current + 1, current - 1, current * 2, int64_t{1} << 31,
                             static_cast<int64_t>(rng() % 64)};
  const int64_t value = choices[rng() % std::size(choices)];
  return value < lo ? lo : (value > hi ? hi : value);
}

float EdgeFloat(std::mt19937& rng) {
  const float choices[] = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           65504.0f, 1e30f, std::numeric_limits<float>::denorm_min()};
  return choices[rng() % std::size(choices)];
}

std::string OtherString(std::mt19937& rng, const std::vector<std::string>& strings) {
  if (rng() % 3 == 0 || strings.empty()) return kOpTypes[rng() % std::size(kOpTypes)];
  return strings[rng() % strings.size()];
}

// Changes a singular scalar field, or one element of a repeated scalar field.
void MutateScalar(std::mt19937& rng, const FieldRef& ref, const std::vector<std::string>& strings) {
  Message* m = ref.message;
  const FieldDescriptor* f = ref.field;
  const Reflection* r = m->GetReflection();
  const bool repeated = f->is_repeated();
  const int index = repeated ? static_cast<int>(rng() % r->FieldSize(*m, f)) : 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const int64_t now = repeated ? r->GetRepeatedInt32(*m, f, index) : r->GetInt32(*m, f);
      const auto value = static_cast<int32_t>(EdgeInteger(rng, now, INT32_MIN, INT32_MAX));
      repeated ? r->SetRepeatedInt32(m, f, index, value) : r->SetInt32(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const int64_t now = repeated ? r->GetRepeatedInt64(*m, f, index) : r->GetInt64(*m, f);
      const int64_t value = EdgeInteger(rng, now, INT64_MIN, INT64_MAX);
      repeated ? r->SetRepeatedInt64(m, f, index, value) : r->SetInt64(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      const auto value = static_cast<uint64_t>(EdgeInteger(rng, 0, 0, INT64_MAX));
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
        repeated ? r->SetRepeatedUInt32(m, f, index, static_cast<uint32_t>(value))
                 : r->SetUInt32(m, f, static_cast<uint32_t>(value));
      } else {
        repeated ? r->SetRepeatedUInt64(m, f, index, value) : r->SetUInt64(m, f, value);
      }
      return;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const float value = EdgeFloat(rng);
      repeated ? r->SetRepeatedFloat(m, f, index, value) : r->SetFloat(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double value = EdgeFloat(rng);
      repeated ? r->SetRepeatedDouble(m, f, index, value) : r->SetDouble(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      repeated ? r->SetRepeatedBool(m, f, index, !r->GetRepeatedBool(*m, f, index))
               : r->SetBool(m, f, !r->GetBool(*m, f));
      return;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* type = f->enum_type();
      const int value = type->value(static_cast<int>(rng() % type->value_count()))->number();
      repeated ? r->SetRepeatedEnumValue(m, f, index, value) : r->SetEnumValue(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        // raw_data: a different length is the interesting change.
        std::string bytes = repeated ? r->GetRepeatedString(*m, f, index) : r->GetString(*m, f);
        bytes.resize(rng() % 2 ? bytes.size() / 2 : bytes.size() + 1 + rng() % 8);
        repeated ? r->SetRepeatedString(m, f, index, bytes) : r->SetString(m, f, bytes);
        return;
      }
      const std::string value = OtherString(rng, strings);
      repeated ? r->SetRepeatedString(m, f, index, value) : r->SetString(m, f, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: return;
  }
}

void MutateField(std::mt19937& rng, const FieldRef& ref, const std::vector<std::string>& strings) {
  Message* m = ref.message;
  const FieldDescriptor* f = ref.field;
  const Reflection* r = m->GetReflection();
  if (!f->is_repeated()) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (rng() % 4 == 0) r->ClearField(m, f);
      return;
    }
    MutateScalar(rng, ref, strings);
    return;
  }
  const int size = r->FieldSize(*m, f);
  switch (rng() % 4) {
    case 0:  // drop the last element (order matters for inputs and outputs)
      r->RemoveLast(m, f);
      return;
    case 1:  // swap two elements
      r->SwapElements(m, f, static_cast<int>(rng() % size), static_cast<int>(rng() % size));
      return;
    case 2:  // duplicate an element at the end
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const Message& from = r->GetRepeatedMessage(*m, f, static_cast<int>(rng() % size));
        r->AddMessage(m, f)->CopyFrom(from);
        return;
      }
      break;
    default: break;
  }
  if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) MutateScalar(rng, ref, strings);
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  static const bool bytes_only = std::getenv("ONNX_AMP_FUZZ_BYTE_MUTATIONS") != nullptr;
  std::mt19937 rng(seed);
  onnx::ModelProto model;
  if (bytes_only || rng() % 4 == 0 || !model.ParseFromArray(data, static_cast<int>(size))) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::vector<FieldRef> fields;
  std::vector<std::string> strings;
  CollectFields(&model, fields, strings);
  if (fields.empty()) return LLVMFuzzerMutate(data, size, max_size);
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < changes; ++i) {
    // Field pointers may dangle after a change that removes messages; collect again.
    if (i > 0) {
      fields.clear();
      CollectFields(&model, fields, strings);
      if (fields.empty()) break;
    }
    MutateField(rng, fields[rng() % fields.size()], strings);
  }
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
