// RetypeValues: writes the dtypes after conversion into the declared types of graph
// inputs, graph outputs and value_info entries, in every graph, so the model states
// what it computes and strict type inference agrees with it.
//   before: value_info h:float (h now produced by a float16 MatMul)
//   after:  value_info h:float16
#pragma once

#include "converter/passes/pass_context.h"

namespace onnx_amp {

Status RetypeValues(PassContext& context);

}  // namespace onnx_amp
