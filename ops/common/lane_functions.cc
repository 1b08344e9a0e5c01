#include "ops/common/lane_functions.h"

#include "ops/common/cpu_clones.h"
#include "ops/common/float_lanes.h"

namespace onnx_amp {
namespace {

template <LaneFunction kFunction>
ONNX_AMP_LANES_INLINE Lanes Apply(Lanes x) {
  if constexpr (kFunction == LaneFunction::kExp) return ExpLanes(x);
  if constexpr (kFunction == LaneFunction::kLog) return LogLanes(x);
  if constexpr (kFunction == LaneFunction::kErf) return ErfLanes(x);
  if constexpr (kFunction == LaneFunction::kSigmoid) return SigmoidLanes(x);
  if constexpr (kFunction == LaneFunction::kTanh) return TanhLanes(x);
  if constexpr (kFunction == LaneFunction::kGelu) return 0.5f * x * (1.0f + ErfLanes(x * 0.70710678118654752440f));
  if constexpr (kFunction == LaneFunction::kGeluTanh) {
    const Lanes k = SplatLanes(0.79788456080286535588f);  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + TanhLanes(k * (x + 0.044715f * x * x * x)));
  }
}

template <LaneFunction kFunction>
ONNX_AMP_CPU_CLONES void LaneRun(const float* in, float* out, int64_t n) {
  MapLanes(in, n, out, [](Lanes x, int64_t) ONNX_AMP_LANES_LAMBDA { return Apply<kFunction>(x); });
}

}  // namespace

void ApplyLaneFunction(LaneFunction function, const float* in, float* out, int64_t n) {
  switch (function) {
    case LaneFunction::kExp: return LaneRun<LaneFunction::kExp>(in, out, n);
    case LaneFunction::kLog: return LaneRun<LaneFunction::kLog>(in, out, n);
    case LaneFunction::kErf: return LaneRun<LaneFunction::kErf>(in, out, n);
    case LaneFunction::kSigmoid: return LaneRun<LaneFunction::kSigmoid>(in, out, n);
    case LaneFunction::kTanh: return LaneRun<LaneFunction::kTanh>(in, out, n);
    case LaneFunction::kGelu: return LaneRun<LaneFunction::kGelu>(in, out, n);
    case LaneFunction::kGeluTanh: return LaneRun<LaneFunction::kGeluTanh>(in, out, n);
  }
}

}  // namespace onnx_amp
