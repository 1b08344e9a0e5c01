// The ONNX schema facts painting and the opset decision share: which type variable of an
// op's schema binds each input and output of a node, and whether a variable admits a dtype.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx { class OpSchema; }

namespace onnx_amp {

enum class FormalSide { kInput, kOutput };

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
