// Relu of float16/bfloat16 values on their bits: a negative value (sign set, not -0,
// not NaN) becomes +0; -0 and NaN stay, as ReluOp (elementwise_math.h) gives on the
// widened values. Integer work the compiler vectorises, instead of widening each value
// to float32 and rounding the result back.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"

namespace onnx_amp {

// out[0, count) = Relu(in[0, count)) for `dtype` kFloat16 or kBFloat16; `out` may be `in`.
void ReluOnLowPrecisionBits(DType dtype, const uint16_t* in, uint16_t* out, int64_t count);

}  // namespace onnx_amp
