#include "converter/painter.h"

namespace onnx_amp::paint_internal {

// Steps 5-9 repeated until the colour matches of step 9 force no more clusters.
void Painter::PaintToFixpoint() {
  std::vector<UnitReason> seeded(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) seeded[u] = units_[u].reason;
  do {
    for (size_t u = 0; u < units_.size(); ++u) {
      units_[u].deny = false;
      units_[u].allow = false;
      if (units_[u].eligible) units_[u].reason = seeded[u];
    }
    PropagateDenyForward();
    PaintBetweenAllows();
    if (policy_.kind == PolicyKind::kMixedBFloat16) PaintInferAfterAllow();
    PaintThroughClear();
  } while (MatchClusters());
}

// Step 9 (TF ForceColorMatchOnRecurrentEdges): a cluster is low only when every
// member is; otherwise every member keeps float32 and takes no part in painting.
bool Painter::MatchClusters() {
  bool forced = false;
  for (Cluster& cluster : clusters_) {
    if (cluster.forced) continue;
    int blocker = -1;
    bool any_low = false;
    for (int u : cluster.members) {
      if (units_[u].allow) {
        any_low = true;
      } else if (blocker < 0) {
        blocker = u;
      }
    }
    if (blocker < 0 || !any_low) continue;
    cluster.forced = true;
    forced = true;
    const UnitReason reason = Text("float32: " + cluster.label + " must match, and its " +
                                   members_[units_[blocker].member].what + " is not low (" +
                                   FinalReason(units_[blocker]) + ")");
    for (int u : cluster.members) {
      units_[u].eligible = false;
      units_[u].reason = reason;
    }
  }
  return forced;
}

void Painter::PropagateDenyForward() {
  const int n = static_cast<int>(units_.size());
  for (int u = 0; u < n; ++u) {
    if (Is(u, PrecisionClass::kDeny)) units_[u].deny = true;
  }
  // Clear units upstream of deny or infer units (through clear units only).
  std::vector<char> upstream(n, 0);
  std::vector<int> stack;
  for (int u = 0; u < n; ++u) {
    if (Is(u, PrecisionClass::kDeny) || Is(u, PrecisionClass::kInfer)) stack.push_back(u);
  }
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int p : Fanin(u)) {
      if (Is(p, PrecisionClass::kClear) && !upstream[p]) {
        upstream[p] = 1;
        stack.push_back(p);
      }
    }
  }
  for (int seed = 0; seed < n; ++seed) {
    if (!Is(seed, PrecisionClass::kDeny)) continue;
    stack.assign(1, seed);
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int v : Fanout(u)) {
        if (units_[v].deny) continue;
        if (!(Is(v, PrecisionClass::kInfer) || (Is(v, PrecisionClass::kClear) && upstream[v]))) continue;
        units_[v].deny = true;
        units_[v].reason = UnitReason(ReasonKind::kDownstreamOfDeny, seed);
        stack.push_back(v);
      }
    }
  }
}

void Painter::PaintBetweenAllows() {
  const int n = static_cast<int>(units_.size());
  for (int u = 0; u < n; ++u) {
    if (Is(u, PrecisionClass::kAllow)) units_[u].allow = true;
  }
  // from[u]: an allow unit upstream of u (forward walk); to[u]: one downstream.
  std::vector<int> from(n, -1), to(n, -1);
  auto walk = [&](std::vector<int>& reached, bool forward) {
    std::vector<int> stack;
    for (int a = 0; a < n; ++a) {
      if (!Is(a, PrecisionClass::kAllow)) continue;
      stack.assign(1, a);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int v : forward ? Fanout(u) : Fanin(u)) {
          if (!Passable(v) || reached[v] >= 0) continue;
          reached[v] = a;
          stack.push_back(v);
        }
      }
    }
  };
  walk(from, true);
  walk(to, false);
  for (int u = 0; u < n; ++u) {
    if (from[u] < 0 || to[u] < 0) continue;
    units_[u].allow = true;
    units_[u].reason = UnitReason(ReasonKind::kBetweenAllows, from[u], to[u]);
  }
}

void Painter::PaintInferAfterAllow() {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      if (!Is(u, PrecisionClass::kInfer) || units_[u].deny || units_[u].allow) continue;
      int allow_fanin = -1;
      bool deny_fanin = false;
      for (int p : Fanin(u)) {
        if (units_[p].allow) allow_fanin = p;
        if (units_[p].deny) deny_fanin = true;
      }
      if (allow_fanin < 0 || deny_fanin) continue;
      units_[u].allow = true;
      units_[u].reason = UnitReason(ReasonKind::kInferAfterAllow, allow_fanin);
      changed = true;
    }
  }
}

void Painter::PaintThroughClear() {
  std::vector<int> stack;
  for (int a = 0; a < static_cast<int>(units_.size()); ++a) {
    if (!units_[a].allow) continue;
    stack.assign(1, a);
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (const std::span<const int> next : {Fanout(u), Fanin(u)}) {
        for (int v : next) {
          if (!Is(v, PrecisionClass::kClear) || units_[v].deny || units_[v].allow) continue;
          units_[v].allow = true;
          units_[v].reason = UnitReason(ReasonKind::kNextToLow, a);
          stack.push_back(v);
        }
      }
    }
  }
}

void Painter::RetargetCasts() {
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    Unit& unit = units_[u];
    if (!unit.cast_output || !unit.eligible) continue;
    const int o = Outputs(u).front();
    if (graph_output_uses_.count(unit.node->output(o))) continue;
    auto it = consumers_.find(OutputValue(refs_[unit.node_ref], o));
    if (it == consumers_.end() || it->second.empty()) continue;
    bool all_low = true;
    for (const Slot& slot : it->second) {
      const int c = slot_units_[refs_[slot.node_ref].InputSlot(slot.index)];
      all_low &= c >= 0 && units_[c].allow;
    }
    if (!all_low) continue;
    unit.allow = true;
    unit.reason = UnitReason(ReasonKind::kCastRetargeted);
  }
}

}  // namespace onnx_amp::paint_internal
