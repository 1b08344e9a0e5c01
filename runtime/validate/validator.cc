#include "runtime/validate/validator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include <onnx/onnx_pb.h>

#include "runtime/core/convert.h"
#include "runtime/executor/executor.h"
#include "runtime/graph/graph_view.h"
#include "runtime/validate/tolerance_rule.h"

namespace onnx_amp {
namespace {

template <typename T>
std::vector<double> Widen(const Tensor& tensor) {
  const T* data = tensor.data<T>();
  return std::vector<double>(data, data + tensor.num_elements());
}

// Every element as a double (integer outputs compare exactly under any tolerance that
// is below one unit).
Expected<std::vector<double>> ToDoubles(const Tensor& tensor, const std::string& name) {
  const size_t count = static_cast<size_t>(tensor.num_elements());
  switch (tensor.dtype()) {
    case DType::kFloat32: return Widen<float>(tensor);
    case DType::kFloat64: return Widen<double>(tensor);
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> widened(count);
      if (tensor.dtype() == DType::kFloat16) {
        ConvertHalfToFloat(tensor.data<uint16_t>(), widened.data(), count);
      } else {
        ConvertBFloat16ToFloat(tensor.data<uint16_t>(), widened.data(), count);
      }
      return std::vector<double>(widened.begin(), widened.end());
    }
    case DType::kInt8: return Widen<int8_t>(tensor);
    case DType::kInt16: return Widen<int16_t>(tensor);
    case DType::kInt32: return Widen<int32_t>(tensor);
    case DType::kInt64: return Widen<int64_t>(tensor);
    case DType::kUInt8: return Widen<uint8_t>(tensor);
    case DType::kUInt16: return Widen<uint16_t>(tensor);
    case DType::kUInt32: return Widen<uint32_t>(tensor);
    case DType::kUInt64: return Widen<uint64_t>(tensor);
    case DType::kBool: return Widen<bool>(tensor);
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128:
      break;
  }
  return Unsupported("value '" + name + "' has element type " + std::string(DTypeName(tensor.dtype())) +
                     ", which is not compared");
}

// Rounds a float32 feed to the low dtype a mixed model declares for that input.
Tensor RoundFeed(const Tensor& feed, DType dtype) {
  if (feed.dtype() != DType::kFloat32 || !IsLowPrecision(dtype)) return feed;
  Tensor rounded = Tensor::Empty(dtype, feed.shape());
  const size_t count = static_cast<size_t>(feed.num_elements());
  if (dtype == DType::kFloat16) {
    ConvertFloatToHalf(feed.data<float>(), rounded.data<uint16_t>(), count);
  } else {
    ConvertFloatToBFloat16(feed.data<float>(), rounded.data<uint16_t>(), count);
  }
  return rounded;
}

// Worse = more violations, then a larger relative L2 error.
bool IsWorse(const TensorMetrics& a, const TensorMetrics& b) {
  if (a.violations != b.violations) return a.violations > b.violations;
  return a.rel_l2_error > b.rel_l2_error;
}

void UpdateRange(const std::vector<double>& values, double& low, double& high, bool first) {
  bool seen = !first;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (!seen) {
      low = high = v;
      seen = true;
    }
    low = std::min(low, v);
    high = std::max(high, v);
  }
}

struct Producer {
  std::string node;
  std::string op_type;
  int position = -1;  // in topological order
};

class Comparer {
 public:
  Comparer(const ValidateOptions& options, std::map<std::string, PathPrecision> paths)
      : options_(options), paths_(std::move(paths)) {}

  // Compares one value of one sample, folds it into `entry` and returns this sample's metrics.
  Expected<TensorMetrics> Compare(const std::string& name, const Tensor& reference, const Tensor& mixed, int sample, bool is_output,
                 TensorComparison& entry) {
    if (reference.shape() != mixed.shape()) {
      return InvalidModel("value '" + name + "' has shape " + ShapeToString(reference.shape()) +
                          " in the float32 model but " + ShapeToString(mixed.shape()) + " in the mixed one");
    }
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> r, ToDoubles(reference, name));
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> c, ToDoubles(mixed, name));
    const bool first = entry.name.empty();
    if (first) {
      entry.name = name;
      entry.is_output = is_output;
      entry.reference_dtype = reference.dtype();
      entry.mixed_dtype = mixed.dtype();
    }
    double reference_max_abs = 0.0;
    for (double v : r) {
      if (std::isfinite(v)) reference_max_abs = std::max(reference_max_abs, std::fabs(v));
    }
    const Tolerance tolerance = ToleranceFor(name, reference_max_abs);
    const int64_t classes = is_output && reference.rank() >= 2 ? reference.shape().back() : 0;
    const TensorMetrics metrics = CompareTensors(r, c, tolerance, classes);
    if (first || IsWorse(metrics, entry.metrics)) {
      entry.metrics = metrics;
      entry.tolerance = tolerance;
      entry.worst_sample = sample;
    }
    entry.passed = entry.passed && metrics.within_tolerance();
    UpdateRange(r, entry.reference_min, entry.reference_max, first);
    UpdateRange(c, entry.mixed_min, entry.mixed_max, first);
    return metrics;
  }

 private:
  Tolerance ToleranceFor(const std::string& name, double reference_max_abs) const {
    if (auto it = options_.per_output.find(name); it != options_.per_output.end()) return it->second;
    if (options_.tolerance) return *options_.tolerance;
    auto it = paths_.find(name);
    return DefaultTolerance(it == paths_.end() ? PathPrecision{} : it->second, reference_max_abs);
  }

  const ValidateOptions& options_;
  std::map<std::string, PathPrecision> paths_;
};

}  // namespace

const TensorComparison* ValidationReport::Find(const std::string& name) const {
  for (const auto* list : {&outputs, &intermediates}) {
    for (const TensorComparison& entry : *list) {
      if (entry.name == name) return &entry;
    }
  }
  return nullptr;
}

Expected<ValidationReport> ValidateModels(const onnx::ModelProto& reference, const onnx::ModelProto& mixed,
                                          const std::vector<Feeds>& samples, const ValidateOptions& options) {
  if (samples.empty()) return InvalidArgument("validation needs at least one input sample");
  for (const auto& [name, tolerance] : options.per_output) {
    bool found = false;
    for (const onnx::ValueInfoProto& output : reference.graph().output()) found = found || output.name() == name;
    if (!found) return InvalidArgument("tolerance for '" + name + "': the model has no output of that name");
  }
  ExecutorOptions capture_everything;
  capture_everything.capture_all = true;  // the first divergence needs every value
  capture_everything.max_memory_bytes = options.max_memory_bytes;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> reference_executor,
                            Executor::Create(reference, capture_everything));
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> mixed_executor, Executor::Create(mixed, capture_everything));
  if (reference_executor->output_names() != mixed_executor->output_names()) {
    return InvalidModel("the float32 and mixed models have different outputs");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<ModelView> mixed_view, BuildModelView(mixed));
  const GraphView& graph = mixed_view->main_graph();

  std::map<std::string, Producer> producers;
  const std::vector<int>& order = graph.topological_order();
  for (size_t position = 0; position < order.size(); ++position) {
    const onnx::NodeProto& node = graph.node(order[position]);
    for (const std::string& output : node.output()) {
      if (!output.empty()) producers[output] = {node.name(), node.op_type(), static_cast<int>(position)};
    }
  }

  Comparer comparer(options, AnalyzePathPrecision(graph));
  ValidationReport report;
  report.samples = static_cast<int>(samples.size());
  std::map<std::string, TensorComparison> outputs, intermediates;
  std::optional<std::pair<int, FirstDivergence>> earliest;  // (topological position, divergence)

  for (size_t sample = 0; sample < samples.size(); ++sample) {
    Feeds mixed_feeds;
    for (const auto& [name, tensor] : samples[sample]) {
      DType declared = tensor.dtype();
      for (const InputSpec& spec : mixed_executor->inputs()) {
        if (spec.name == name) declared = spec.dtype;
      }
      mixed_feeds[name] = RoundFeed(tensor, declared);
    }
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult expected, reference_executor->Run(samples[sample]));
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult actual, mixed_executor->Run(mixed_feeds));
    const int sample_index = static_cast<int>(sample);

    for (size_t i = 0; i < expected.outputs.size(); ++i) {
      const std::string& name = expected.outputs[i].name;
      Expected<TensorMetrics> metrics = comparer.Compare(name, expected.outputs[i].tensor,
                                                         actual.outputs[i].tensor, sample_index, true, outputs[name]);
      if (!metrics.ok()) return metrics.status().WithContext("output '" + name + "'");
    }

    for (const auto& [name, mixed_value] : actual.captured) {
      auto ref = expected.captured.find(name);
      if (ref == expected.captured.end()) continue;  // a Cast the converter added
      if (!IsFloatingPoint(ref->second.dtype()) || !IsFloatingPoint(mixed_value.dtype())) continue;
      TensorComparison& entry = intermediates[name];
      ONNX_AMP_ASSIGN_OR_RETURN(TensorMetrics metrics,
                                comparer.Compare(name, ref->second, mixed_value, sample_index, false, entry));
      auto producer = producers.find(name);
      if (producer == producers.end()) continue;  // a graph input
      const bool turned_non_finite = metrics.candidate_non_finite > metrics.reference_non_finite;
      if (metrics.within_tolerance() && !turned_non_finite) continue;
      const int position = producer->second.position;
      if (earliest && earliest->first <= position) continue;
      FirstDivergence divergence;
      divergence.node = producer->second.node;
      divergence.op_type = producer->second.op_type;
      divergence.dtype = mixed_value.dtype();
      divergence.value = name;
      divergence.non_finite = turned_non_finite;
      divergence.sample = sample_index;
      const onnx::NodeProto& node = graph.node(order[position]);
      divergence.inputs.assign(node.input().begin(), node.input().end());
      earliest = std::make_pair(position, divergence);
    }
  }

  for (const std::string& name : reference_executor->output_names()) {
    TensorComparison entry = outputs[name];
    if (auto producer = producers.find(name); producer != producers.end()) {
      entry.producer = producer->second.node;
      entry.op_type = producer->second.op_type;
    }
    report.passed = report.passed && entry.passed;
    report.outputs.push_back(std::move(entry));
  }
  report.per_node = options.per_node;
  {
    std::vector<std::pair<int, TensorComparison>> ordered;
    for (auto& [name, entry] : intermediates) {
      auto producer = producers.find(name);
      const int position = producer == producers.end() ? -1 : producer->second.position;
      if (producer != producers.end()) {
        entry.producer = producer->second.node;
        entry.op_type = producer->second.op_type;
      }
      ordered.emplace_back(position, std::move(entry));
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [position, entry] : ordered) report.intermediates.push_back(std::move(entry));
  }
  if (earliest) report.first_divergence = earliest->second;
  return report;
}

}  // namespace onnx_amp
