// TensorProto <-> Tensor, for initializers, Constant attributes and the .pb tensor
// files of the ONNX test data. Values may sit in raw_data (little-endian) or in the
// typed fields ONNX defines (float16/bfloat16 and the small integer types as int32_data,
// uint32/uint64 as uint64_data). Strings, complex numbers, segments and external data
// are rejected with an Unsupported status naming the tensor.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/io/named_tensor.h"

namespace onnx {
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace onnx_amp {

// Decodes a CPU tensor; the proto's name (or "<unnamed>") appears in every error.
Expected<Tensor> TensorFromProto(const onnx::TensorProto& proto);
// The tensor a Constant node holds, from whichever value attribute it has (value,
// value_float(s), value_int(s)): the one decoding that the Constant kernel and the readers
// of constant operands (gradient rules, plan fusions) share. Unsupported for string and
// sparse values, InvalidModel without a value attribute; the message does not name the
// node, which its callers do.
Expected<Tensor> ConstantNodeValue(const onnx::NodeProto& node);
// Encodes a CPU tensor into raw_data, as ONNX tools write it.
Expected<onnx::TensorProto> TensorToProto(const Tensor& tensor, const std::string& name);

// A serialized TensorProto file (input_0.pb, output_0.pb); errors name the file.
Expected<NamedTensor> ReadTensorProtoFile(const std::filesystem::path& path);
// Writes atomically (a temporary file renamed into place).
Status WriteTensorProtoFile(const std::filesystem::path& path, const Tensor& tensor, const std::string& name);

}  // namespace onnx_amp
