// Node and value helpers shared by the builders of the training graph
// (training_graph.cc) and of the update graph (update_graph.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ops/gradient_context.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

// Appends node `name` to `graph`; `domain` "" is the default ONNX domain.
onnx::NodeProto& AddNode(onnx::GraphProto& graph, const std::string& name, const std::string& op_type,
                         std::string_view domain, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, Attributes attributes = {});

// Makes `info` the tensor value `name` of ONNX element type `elem_type` and static `shape`.
void SetTensorValueInfo(onnx::ValueInfoProto& info, const std::string& name, int32_t elem_type, const Shape& shape);

}  // namespace onnx_amp
