// Shared checks for the converter tests: run a conversion, read the report, count
// Casts, and count the dtype boundaries of a painted graph independently of the passes.
#pragma once

#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"

namespace onnx_amp::testing {

inline ConvertOptions Options(PolicyKind kind) {
  ConvertOptions options;
  options.policy.kind = kind;
  EXPECT_TRUE(options.policy.Compile().ok());
  return options;
}

inline ConvertResult ConvertOk(const onnx::ModelProto& model, const ConvertOptions& options) {
  auto result = ConvertModel(model, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  return std::move(result).value();
}

// The dtype the report gives node `name` ("float16", "float", "n/a"); "" if absent.
inline std::string NodeDType(const ConversionReport& report, const std::string& name) {
  for (const NodeReport& node : report.nodes) {
    if (node.name == name) return node.dtype;
  }
  return "";
}

inline int CountOps(const onnx::GraphProto& graph, const std::string& op) {
  int count = 0;
  for (const auto& node : graph.node()) count += node.op_type() == op;
  return count;
}

// Distinct (value, reader dtype) pairs of the main graph where the reader's dtype
// differs from the producer's, plus outputs produced low: the Casts a conversion
// needs. Valid for graphs whose nodes have one float type variable; initializers are
// converted, not cast, so their edges do not count.
inline int CountBoundaryEdges(const onnx::GraphProto& graph, const ConversionReport& report) {
  std::map<std::string, std::string> producer_dtype;
  for (const auto& input : graph.input()) producer_dtype[input.name()] = "float";
  for (const auto& node : graph.node()) {
    for (const auto& out : node.output()) producer_dtype[out] = NodeDType(report, node.name());
  }
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& node : graph.node()) {
    const std::string reader = NodeDType(report, node.name());
    for (const auto& in : node.input()) {
      auto it = producer_dtype.find(in);
      if (it == producer_dtype.end() || it->second == "n/a" || reader == "n/a") continue;
      if (it->second != reader) edges.insert({in, reader});
    }
  }
  int outputs = 0;
  for (const auto& output : graph.output()) outputs += producer_dtype[output.name()] != "float";
  return static_cast<int>(edges.size()) + outputs;
}

}  // namespace onnx_amp::testing
