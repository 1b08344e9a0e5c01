#include "converter/search/auto_convert.h"

#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "converter/search/painted_regions.h"

namespace onnx_amp {
namespace {

std::string EscapeRegex(const std::string& text) {
  static const std::string kSpecial = "\\^$.|?*+()[]{}/";
  std::string escaped;
  for (char c : text) {
    if (kSpecial.find(c) != std::string::npos) escaped += '\\';
    escaped += c;
  }
  return escaped;
}

// The user's pattern, or'ed with an exact match of every denied name.
std::string DenialPattern(const std::string& user_pattern, const std::set<std::string>& denied) {
  if (denied.empty()) return user_pattern;
  std::string names;
  for (const std::string& name : denied) names += (names.empty() ? "" : "|") + EscapeRegex(name);
  std::string pattern = "^(?:" + names + ")$";
  return user_pattern.empty() ? pattern : "(?:" + user_pattern + ")|" + pattern;
}

// Denial works by node name, so every main-graph node needs a unique one.
void NameUnnamedNodes(onnx::ModelProto& model) {
  std::unordered_set<std::string> taken;
  for (const onnx::NodeProto& node : model.graph().node()) taken.insert(node.name());
  for (int i = 0; i < model.graph().node_size(); ++i) {
    onnx::NodeProto* node = model.mutable_graph()->mutable_node(i);
    if (!node->name().empty()) continue;
    std::string name = "onnx_amp_node_" + std::to_string(i);
    for (int suffix = 1; taken.count(name); ++suffix) name = "onnx_amp_node_" + std::to_string(i) + "_" + std::to_string(suffix);
    taken.insert(name);
    node->set_name(name);
  }
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

struct Attempt {
  ConvertResult conversion;
  ValidationReport validation;
};

class Search {
 public:
  Search(const onnx::ModelProto& model, const std::vector<Feeds>& samples, const AutoConvertOptions& options)
      : model_(model), samples_(samples), options_(options) {}

  Expected<ConvertResult> Convert(const std::set<std::string>& denied) const {
    ConvertOptions convert = options_.convert;
    convert.policy.fp32_nodes = DenialPattern(options_.convert.policy.fp32_nodes, denied);
    ONNX_AMP_RETURN_IF_ERROR(convert.policy.Compile());
    return ConvertModel(model_, convert);
  }

  // Converts with `denied` kept float32 and validates, once per distinct set.
  Expected<const Attempt*> Try(const std::set<std::string>& denied) {
    if (auto it = attempts_.find(denied); it != attempts_.end()) return &it->second;
    ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult conversion, Convert(denied));
    ++runs_;
    ONNX_AMP_ASSIGN_OR_RETURN(ValidationReport validation,
                              ValidateModels(model_, conversion.model, samples_, options_.validate));
    auto [it, inserted] = attempts_.emplace(denied, Attempt{std::move(conversion), std::move(validation)});
    return &it->second;
  }

  // Bisects `groups` (each a set of node names): the index of the group whose denial,
  // on top of `denied`, is taken to fix the model.
  Expected<size_t> Bisect(const std::set<std::string>& denied, const std::vector<std::vector<std::string>>& groups) {
    size_t low = 0, high = groups.size();
    while (high - low > 1) {
      const size_t mid = low + (high - low) / 2;
      std::set<std::string> trial = denied;
      for (size_t i = low; i < mid; ++i) trial.insert(groups[i].begin(), groups[i].end());
      ONNX_AMP_ASSIGN_OR_RETURN(const Attempt* attempt, Try(trial));
      if (attempt->validation.passed) {
        high = mid;
      } else {
        low = mid;
      }
    }
    return low;
  }

  int runs() const { return runs_; }

 private:
  const onnx::ModelProto& model_;
  const std::vector<Feeds>& samples_;
  const AutoConvertOptions& options_;
  std::map<std::set<std::string>, Attempt> attempts_;
  int runs_ = 0;
};

std::string SearchReason(const ValidationReport& failed) {
  if (!failed.first_divergence) return "keeping it float32 made every sample validate";
  const FirstDivergence& d = *failed.first_divergence;
  const TensorComparison* value = failed.Find(d.value);
  std::string reason = "before it was denied, '" + d.value + "' (node '" + d.node + "', " + d.op_type + ") ";
  reason += d.non_finite ? "turned non-finite" : "left its tolerance";
  if (value && !d.non_finite) reason += " (max abs error " + Format("%.3g", value->metrics.max_abs_error) + ")";
  return reason + " on sample " + std::to_string(d.sample);
}

}  // namespace

std::string_view ForcedStageName(ForcedStage stage) {
  switch (stage) {
    case ForcedStage::kRangeScreen: return "range-screen";
    case ForcedStage::kSearch: return "search";
  }
  return "?";
}

Expected<AutoConvertResult> AutoConvert(const onnx::ModelProto& original, const std::vector<Feeds>& samples,
                                        const AutoConvertOptions& options) {
  onnx::ModelProto model = original;
  NameUnnamedNodes(model);
  std::map<std::string, std::string> op_types;
  for (const onnx::NodeProto& node : model.graph().node()) op_types[node.name()] = node.op_type();

  Search search(model, samples, options);
  AutoConvertReport report;
  std::set<std::string> denied;

  if (options.screen_ranges && options.convert.policy.LowType() != DType::kFloat32) {
    ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult painted, search.Convert(denied));
    std::set<std::string> low;
    for (const PaintedRegion& region : PaintedRegions(model, painted.report)) low.insert(region.nodes.begin(), region.nodes.end());
    RangeScreenOptions screen_options;
    screen_options.low_type = options.convert.policy.LowType();
    ONNX_AMP_ASSIGN_OR_RETURN(RangeScreenResult screen, ScreenRanges(model, samples, screen_options));
    for (const ScreenedNode& screened : screen.nodes) {
      if (!low.count(screened.node) || denied.count(screened.node)) continue;
      denied.insert(screened.node);
      ForcedNode forced;
      forced.node = screened.node;
      forced.op_type = screened.op_type;
      forced.stage = ForcedStage::kRangeScreen;
      forced.value = screened.value;
      forced.magnitude = screened.max_abs;
      forced.reason = "range screen: " + DescribeScreenedNode(screened, screen_options.low_type);
      report.forced.push_back(std::move(forced));
    }
  }

  for (;;) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Attempt* current, search.Try(denied));
    ++report.rounds;
    if (current->validation.passed) {
      report.passed = true;
      report.validation = current->validation;
      report.validation_runs = search.runs();
      return AutoConvertResult{current->conversion, std::move(report)};
    }
    const ValidationReport failed = current->validation;
    const std::vector<PaintedRegion> regions = PaintedRegions(model, current->conversion.report);
    if (regions.empty()) {
      std::string message = "convert --auto: validation still fails with every painted region in float32";
      if (failed.first_divergence) {
        message += "; first divergence at node '" + failed.first_divergence->node + "', value '" +
                   failed.first_divergence->value + "' (check the tolerances)";
      }
      return NumericError(message);
    }
    std::vector<std::vector<std::string>> region_groups;
    for (const PaintedRegion& region : regions) region_groups.push_back(region.nodes);
    report.regions_searched += static_cast<int>(region_groups.size());
    ONNX_AMP_ASSIGN_OR_RETURN(const size_t guilty_region, search.Bisect(denied, region_groups));

    std::vector<std::vector<std::string>> node_groups;
    for (const std::string& name : regions[guilty_region].nodes) node_groups.push_back({name});
    report.nodes_searched += static_cast<int>(node_groups.size());
    ONNX_AMP_ASSIGN_OR_RETURN(const size_t guilty_node, search.Bisect(denied, node_groups));

    const std::string& name = node_groups[guilty_node][0];
    denied.insert(name);
    ForcedNode forced;
    forced.node = name;
    forced.op_type = op_types[name];
    forced.stage = ForcedStage::kSearch;
    if (failed.first_divergence) {
      forced.value = failed.first_divergence->value;
      forced.non_finite = failed.first_divergence->non_finite;
      if (const TensorComparison* value = failed.Find(forced.value)) forced.magnitude = value->metrics.max_abs_error;
    }
    forced.reason = "search (region " + std::to_string(guilty_region + 1) + " of " + std::to_string(regions.size()) +
                    "): " + SearchReason(failed);
    report.forced.push_back(std::move(forced));
  }
}

}  // namespace onnx_amp
