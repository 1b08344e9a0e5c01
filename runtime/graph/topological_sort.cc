#include "runtime/graph/topological_sort.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace onnx_amp {
namespace {

// Walks back from a node Kahn could not place: each such node still waits for a
// predecessor that was not placed either, so the walk must revisit a node, closing a cycle.
std::vector<int> FindCycle(const std::vector<std::vector<int>>& predecessors,
                           const std::vector<int>& pending) {
  const int num_nodes = static_cast<int>(predecessors.size());
  std::vector<int> position_on_path(num_nodes, -1);
  std::vector<int> path;
  int current = -1;
  for (int i = 0; i < num_nodes && current < 0; ++i) {
    if (pending[i] > 0) current = i;
  }
  while (current >= 0 && position_on_path[current] < 0) {
    position_on_path[current] = static_cast<int>(path.size());
    path.push_back(current);
    int next = -1;
    for (int predecessor : predecessors[current]) {
      if (pending[predecessor] > 0) {
        next = predecessor;
        break;
      }
    }
    current = next;
  }
  if (current < 0) return {};
  std::vector<int> cycle(path.begin() + position_on_path[current], path.end());
  // The walk followed edges backwards; report them in data-flow order.
  std::reverse(cycle.begin(), cycle.end());
  return cycle;
}

}  // namespace

TopologicalSortResult StableTopologicalSort(const std::vector<std::vector<int>>& predecessors) {
  const int num_nodes = static_cast<int>(predecessors.size());
  std::vector<int> pending(num_nodes, 0);
  std::vector<std::vector<int>> successors(num_nodes);
  for (int node = 0; node < num_nodes; ++node) {
    pending[node] = static_cast<int>(predecessors[node].size());
    for (int predecessor : predecessors[node]) successors[predecessor].push_back(node);
  }

  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int node = 0; node < num_nodes; ++node) {
    if (pending[node] == 0) ready.push(node);
  }
  TopologicalSortResult result;
  result.order.reserve(num_nodes);
  while (!ready.empty()) {
    const int node = ready.top();
    ready.pop();
    result.order.push_back(node);
    for (int successor : successors[node]) {
      if (--pending[successor] == 0) ready.push(successor);
    }
  }
  if (static_cast<int>(result.order.size()) < num_nodes) {
    result.cycle = FindCycle(predecessors, pending);
  }
  return result;
}

}  // namespace onnx_amp
