// Range screening: runs sample inputs through the float32 model, records the range of
// every float value of the main graph, and names the nodes whose outputs a low dtype
// cannot hold: values beyond its largest finite number (they would turn into inf), or
// values that mostly vanish (more than `underflow_fraction` of the nonzero finite
// values below its smallest subnormal, 2^-24 for float16, so they would flush to zero
// in bulk). The converter denies those nodes before it paints (convert --auto).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/validate/sample_inputs.h"

namespace onnx { class ModelProto; }

namespace onnx_amp {

struct RangeScreenOptions {
  DType low_type = DType::kFloat16;  // the dtype the values would be stored in
  double underflow_fraction = 0.5;
};

struct ValueRangeRecord {
  std::string value;
  std::string node;     // its producer
  std::string op_type;
  int64_t finite = 0;   // over all samples
  int64_t nonzero = 0;  // finite and nonzero
  int64_t below_subnormal = 0;  // nonzero with |x| below the low dtype's smallest subnormal
  double max_abs = 0.0;         // over finite values
  double min = 0.0, max = 0.0;  // over finite values
};

enum class RangeProblem { kOverflow, kUnderflow };

struct ScreenedNode {
  std::string node;
  std::string op_type;
  std::string value;  // the output that does not fit
  RangeProblem problem = RangeProblem::kOverflow;
  double max_abs = 0.0;
  double underflow_share = 0.0;  // below_subnormal / nonzero
};

struct RangeScreenResult {
  std::vector<ValueRangeRecord> values;  // node outputs of the main graph, topological order
  std::vector<ScreenedNode> nodes;       // topological order, each node once
};

std::string DescribeScreenedNode(const ScreenedNode& node, DType low_type);

// `float32_model` is the unconverted model. Errors: those of the executor, and
// InvalidArgument without samples.
Expected<RangeScreenResult> ScreenRanges(const onnx::ModelProto& float32_model, const std::vector<Feeds>& samples,
                                         const RangeScreenOptions& options);

}  // namespace onnx_amp
