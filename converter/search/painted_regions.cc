#include "converter/search/painted_regions.h"

#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "converter/report.h"
#include "runtime/core/dtype.h"

namespace onnx_amp {
namespace {

int Root(std::vector<int>& parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

}  // namespace

std::vector<PaintedRegion> PaintedRegions(const onnx::ModelProto& model, const ConversionReport& report) {
  const std::string float16(DTypeName(DType::kFloat16));
  const std::string bfloat16(DTypeName(DType::kBFloat16));
  std::set<std::string> low;
  for (const NodeReport& node : report.nodes) {
    if (node.graph == "main" && !node.name.empty() && (node.dtype == float16 || node.dtype == bfloat16)) {
      low.insert(node.name);
    }
  }
  const onnx::GraphProto& graph = model.graph();
  const int count = graph.node_size();
  std::vector<int> parent(static_cast<size_t>(count));
  std::iota(parent.begin(), parent.end(), 0);
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < count; ++i) {
    for (const std::string& output : graph.node(i).output()) {
      if (!output.empty()) producer[output] = i;
    }
  }
  for (int i = 0; i < count; ++i) {
    if (!low.count(graph.node(i).name())) continue;
    for (const std::string& input : graph.node(i).input()) {
      auto it = producer.find(input);
      if (it == producer.end() || !low.count(graph.node(it->second).name())) continue;
      parent[static_cast<size_t>(Root(parent, i))] = Root(parent, it->second);
    }
  }
  std::map<int, size_t> region_of_root;
  std::vector<PaintedRegion> regions;
  for (int i = 0; i < count; ++i) {
    if (!low.count(graph.node(i).name())) continue;
    const int root = Root(parent, i);
    auto [it, inserted] = region_of_root.emplace(root, regions.size());
    if (inserted) regions.emplace_back();
    regions[it->second].nodes.push_back(graph.node(i).name());
  }
  return regions;
}

}  // namespace onnx_amp
