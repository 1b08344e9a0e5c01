// The type facts of ONNX op schemas that type inference, painting and the opset
// decision share: which type variable binds each input and output of a node, and
// which types a variable or a fixed-type parameter admits. A schema's facts are
// compiled once (SignatureOf) into bit sets, so asking them per node costs no string
// comparison.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx { class OpSchema; class TypeProto; }

namespace onnx_amp {

// What a value is: a tensor, a sequence of tensors, an optional tensor or an optional
// sequence with an element type (an ONNX TensorProto.DataType code, so float8 and int4
// types count as well), or something else (maps, sparse tensors).
enum class ValueKind : uint8_t { kUnknown, kTensor, kSequence, kOptional, kOptionalSequence, kOther };

struct ValueType {
  ValueKind kind = ValueKind::kUnknown;
  int32_t elem = 0;  // ONNX element type code; 0 when unknown or not applicable

  static ValueType Tensor(int32_t elem) { return {ValueKind::kTensor, elem}; }
  static ValueType Tensor(DType dtype) { return {ValueKind::kTensor, ToOnnx(dtype)}; }
  bool known() const { return kind != ValueKind::kUnknown; }
  // The element type of a tensor; kUndefined for anything else or a code DType lacks.
  DType TensorDType() const;
  bool operator==(const ValueType&) const = default;
};

// "tensor(float16)", "seq(tensor(int64))", "optional(tensor(bool))", ...; "?" unknown.
std::string TypeString(const ValueType& type);

// The type a TypeProto declares; kUnknown when it declares none (or elem_type 0).
ValueType ValueTypeOf(const onnx::TypeProto& proto);
// `type` as a TypeProto without a shape; kOther and kUnknown leave it empty.
void SetTypeProto(const ValueType& type, onnx::TypeProto& proto);

// A set of value types, as a schema's allowed type strings give it.
struct TypeSet {
  uint32_t tensors = 0;    // bit `elem` for tensor(elem)
  uint32_t sequences = 0;  // seq(tensor(elem))
  uint32_t optionals = 0;  // optional(tensor(elem))
  uint32_t optional_sequences = 0;  // optional(seq(tensor(elem)))
  bool others = false;     // anything else (map, sparse_tensor)

  bool Admits(const ValueType& type) const;
  // The one type of a set that holds exactly one; nullopt otherwise.
  std::optional<ValueType> Only() const;
};

enum class FormalSide { kInput, kOutput };

// One formal input or output of a schema.
struct FormalParam {
  int variable = -1;       // index into SchemaSignature::variables; -1 for a fixed type
  TypeSet allowed;         // the variable's set, or the fixed type
  bool variadic = false;   // the last parameter, standing for every later index
  bool homogeneous = true; // a variadic one whose values all share its variable
};

struct SchemaSignature {
  std::vector<FormalParam> inputs;
  std::vector<FormalParam> outputs;
  std::vector<std::string> variables;  // "T", "T1", ...

  // The parameter of input or output `index` (the variadic last one covers later
  // indices); nullptr beyond the parameters.
  const FormalParam* Param(FormalSide side, int index) const;
};

// `schema`'s signature, compiled on first use; the registry owns schemas for the life
// of the process, so the reference stays valid. Thread-safe.
const SchemaSignature& SignatureOf(const onnx::OpSchema& schema);

struct FormalType {
  // "T"; a member of a heterogeneous variadic (If/Loop/Scan's "V") gets its own key,
  // "V#in2" or "V#out0", since each of its values may have a different type.
  std::string variable;
  const std::vector<std::string>* allowed = nullptr;  // "tensor(float16)", ... (owned by the schema)
};

// The type variable binding input or output `index` of a node with `schema`; nullopt when
// the index is beyond the schema's parameters or the parameter has a fixed type
// (tensor(float), tensor(int64), ...).
std::optional<FormalType> FormalTypeOf(const onnx::OpSchema& schema, FormalSide side, int index);

// Whether a type constraint's allowed list holds tensor(`dtype`).
bool AdmitsDType(const std::vector<std::string>& allowed, DType dtype);

}  // namespace onnx_amp
