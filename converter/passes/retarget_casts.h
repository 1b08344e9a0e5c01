// RetargetCasts: an existing Cast(to=FLOAT) whose consumers are all low casts straight
// to the low dtype (TF MakeCastsAllowIfAllOutputsAllow; OCC #320 left these at to=1).
//   before: x:int64 -> Cast(to=FLOAT) -> MatMul(fp16)
//   after:  x:int64 -> Cast(to=FLOAT16) -> MatMul(fp16)
// Paint decides (step 10); this pass writes the attribute. Casts through int or bool
// are never touched.
#pragma once

#include "converter/passes/pass_context.h"

namespace onnx_amp {

Status RetargetCasts(PassContext& context);

}  // namespace onnx_amp
