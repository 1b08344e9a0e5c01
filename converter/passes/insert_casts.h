// InsertCasts: wherever a value's dtype after painting differs from the dtype a
// consumer reads it in, one Cast per (value, target dtype) per graph converts it. The
// Cast sits in the consumer's graph (inside a Loop/If/Scan body when the consumer is
// there), right after the value's producer when that is in the same graph, else first.
//   before: x:float -> MatMul(fp16), x:float -> Add(fp16)
//   after:  x -> Cast(to=FLOAT16) -> x_amp_float16 -> MatMul, Add
// A graph output that must keep its dtype while its producer went low: the producer's
// output is renamed and a Cast writes the original name, so I/O names never change.
// Created Casts are named "amp_cast/..." and tagged with kAmpCastTag in doc_string, so
// they can be told from the user's Casts. Below opset 6 (report.opset, the output
// model's opset) they are Cast-1 nodes: `to` is a type name ("FLOAT16") and, as Cast-1
// has no type inference, a value_info entry declares each new value's dtype.
#pragma once

#include "converter/passes/pass_context.h"

namespace onnx_amp {

inline constexpr const char* kAmpCastTag = "onnx-amp:cast";

Status InsertCasts(PassContext& context);

}  // namespace onnx_amp
