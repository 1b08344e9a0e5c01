// Test utility: reads the ONNX backend test data (model.onnx and test_data_set_N/*.pb)
// into protobuf messages and Tensors.
#pragma once

#include <filesystem>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp::testing {

Expected<onnx::ModelProto> ReadModelProto(const std::filesystem::path& path);
Expected<onnx::TensorProto> ReadTensorProto(const std::filesystem::path& path);
// Numeric and bool tensors, from raw_data or the typed fields.
Expected<Tensor> TensorFromProto(const onnx::TensorProto& proto);

}  // namespace onnx_amp::testing
