// RewriteAttributes: nodes painted low whose output dtype lives in an attribute get it
// rewritten: Constant values (value / value_float / value_floats), ConstantOfShape
// `value`, and `dtype` attributes. Converted constants are clamped and reported as
// initializers are.
//   before: Constant(value=float[3]) -> Mul(fp16)
//   after:  Constant(value=float16[3]) -> Mul(fp16)
#pragma once

#include "converter/passes/pass_context.h"

namespace onnx_amp {

Status RewriteAttributes(PassContext& context);

}  // namespace onnx_amp
