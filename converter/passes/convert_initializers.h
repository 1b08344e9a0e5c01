// ConvertInitializers: a float32 initializer read only by low consumers is converted
// in place; one read by low and float32 consumers is duplicated, the low copy feeding
// the low consumers (no Cast at run time, the float32 readers keep exact weights).
//   before: W:float -> MatMul(fp16), W:float -> ReduceSum(fp32)
//   after:  W_amp_float16:float16 -> MatMul, W:float -> ReduceSum
// float16 clamps finite values beyond +-65504 and reports each clamped tensor;
// bfloat16 rounds to nearest even. External-data initializers are left as they are
// and get a Cast from InsertCasts.
#pragma once

#include "converter/passes/unique_names.h"
#include "converter/plan.h"
#include "converter/report.h"
#include "runtime/core/status.h"

namespace onnx_amp {

Status ConvertInitializers(ConversionPlan& plan, UniqueNames& names, ConversionReport& report);

}  // namespace onnx_amp
