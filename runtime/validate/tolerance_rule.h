// Default tolerances, derived from the dtype and the graph rather than copied around.
//
// Every node that runs in a low dtype reads rounded inputs and rounds its output once,
// so each adds at most about one unit roundoff u of relative error per operand. Along a
// path of d such nodes the worst case grows linearly, so a value's tolerance is
//   rtol = 2 * u * (d + 1),   atol = rtol * max|reference|
// where u is the unit roundoff of the lowest precision on the path (2^-11 float16,
// 2^-8 bfloat16) and d is the number of low-precision nodes on the longest path from
// the graph inputs to the value. The absolute part, scaled by the tensor's magnitude,
// covers elements near zero after cancellation (a dot product of rounded operands is
// accurate relative to sum|a_i b_i|, not to its own value). Values computed entirely in
// float32 get rtol = 2 * u_float32 * (d + 1) with d counting every node.
//
// Checked against the bundled models (tests/validate/validate_cli_test.py, 3 random
// samples each): the transformer block's probabilities stay 7x inside the rule under
// mixed_float16 (max rel error 0.0037 against rtol 0.028) and 10x under mixed_bfloat16
// (0.023 against 0.23); a planted overflow and a float16 LayerNorm still fail, since an
// inf is never within tolerance. The rule is a worst-case bound, so it is loose for
// deep bfloat16 paths; tighten per output with --tolerance where that matters.
#pragma once

#include <map>
#include <string>

#include "runtime/core/dtype.h"
#include "runtime/validate/tensor_metrics.h"

namespace onnx { class ModelProto; }

namespace onnx_amp {

class GraphView;

struct PathPrecision {
  int depth = 0;                       // low-precision nodes on the longest path
  int float32_depth = 0;               // all nodes on the longest path
  DType lowest = DType::kFloat32;      // lowest float precision seen on the way
};

// Path precision of every value of the (mixed) main graph, by value name.
std::map<std::string, PathPrecision> AnalyzePathPrecision(const GraphView& mixed_graph);

// The tolerance of one value with the given reference magnitude.
Tolerance DefaultTolerance(const PathPrecision& path, double reference_max_abs);

}  // namespace onnx_amp
