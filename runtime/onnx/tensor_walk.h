// Visits every TensorProto held anywhere in an ONNX message: graph initializers,
// sparse initializers, node attributes (Constant values), subgraphs of If/Loop/Scan
// at any depth, model-local functions and training_info graphs. The walk goes by
// protobuf reflection over the fields whose types can hold a tensor (found from the
// descriptors), so fields added to onnx.proto later are covered too.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// `node_name` is the innermost node holding the tensor ("" for initializers).
using TensorVisitor = std::function<Status(onnx::TensorProto& tensor, std::string_view node_name)>;
using ConstTensorVisitor = std::function<Status(const onnx::TensorProto& tensor, std::string_view node_name)>;

// Visits in field order; stops at and returns the first error the visitor returns.
Status ForEachTensor(google::protobuf::Message& root, const TensorVisitor& visit);
Status ForEachTensor(const google::protobuf::Message& root, const ConstTensorVisitor& visit);

// "tensor 'W'", or "tensor in node 'const_1'" for unnamed attribute tensors; used in errors.
std::string DescribeTensor(const onnx::TensorProto& tensor, std::string_view node_name);

}  // namespace onnx_amp
