// Runs a float32 reference model and a mixed-precision model on the same inputs and
// compares every output and, with per_node, every intermediate value the two graphs
// share by name (the converter keeps node output names; only its Casts add values).
// Reports per-tensor metrics, the tolerance each was held to, and the first node, in
// the mixed graph's topological order, whose output left its tolerance or turned
// non-finite.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/validate/sample_inputs.h"
#include "runtime/validate/tensor_metrics.h"

namespace onnx { class ModelProto; }

namespace onnx_amp {

class Device;

struct ValidateOptions {
  bool per_node = false;
  std::optional<Tolerance> tolerance;             // overrides the derived rule everywhere
  std::map<std::string, Tolerance> per_output;   // overrides for named outputs
  size_t max_memory_bytes = 0;                    // ExecutorOptions::max_memory_bytes of both runs
  Device* device = nullptr;                       // ExecutorOptions::device of both runs
};

struct TensorComparison {
  std::string name;
  std::string producer;     // node name ("" for graph inputs)
  std::string op_type;
  DType reference_dtype = DType::kUndefined;
  DType mixed_dtype = DType::kUndefined;
  bool is_output = false;
  Tolerance tolerance;
  TensorMetrics metrics;      // of the worst sample (most violations, then largest rel L2)
  int worst_sample = 0;
  double reference_min = 0, reference_max = 0;  // over all samples, finite values
  double mixed_min = 0, mixed_max = 0;
  bool passed = true;         // within tolerance on every sample
};

struct FirstDivergence {
  std::string node;
  std::string op_type;
  DType dtype = DType::kUndefined;
  std::string value;          // the output that diverged
  bool non_finite = false;    // it turned inf/NaN where float32 is finite
  int sample = 0;
  std::vector<std::string> inputs;  // the node's inputs, for the report to look up
};

struct ValidationReport {
  int samples = 0;
  std::vector<TensorComparison> outputs;        // graph outputs, declaration order
  // Every shared intermediate value, in topological order (always kept, so the first
  // divergence can describe its inputs; listed in reports only with per_node).
  std::vector<TensorComparison> intermediates;
  bool per_node = false;
  std::optional<FirstDivergence> first_divergence;
  bool passed = true;                           // every output within tolerance
  const TensorComparison* Find(const std::string& name) const;
};

// Both models must have the same graph input and output names. Feeds hold float32 for
// float inputs; a mixed model whose inputs are low precision (no keep-io-types) gets
// them rounded.
Expected<ValidationReport> ValidateModels(const onnx::ModelProto& reference, const onnx::ModelProto& mixed,
                                          const std::vector<Feeds>& samples, const ValidateOptions& options);

}  // namespace onnx_amp
