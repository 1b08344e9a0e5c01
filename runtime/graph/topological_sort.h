// Stable topological sort (Kahn's algorithm): among the nodes ready at any moment the
// lowest index goes first, so a graph already in order keeps its file order.
#pragma once

#include <vector>

namespace onnx_amp {

struct TopologicalSortResult {
  std::vector<int> order;  // every node when the graph is acyclic
  std::vector<int> cycle;  // otherwise the nodes of one cycle, each feeding the next
};

// predecessors[i] lists the nodes that must come before node i (repeats allowed).
TopologicalSortResult StableTopologicalSort(const std::vector<std::vector<int>>& predecessors);

}  // namespace onnx_amp
