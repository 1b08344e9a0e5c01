// The low-precision copies of the master weights that a mixed-precision training graph
// reads. The converter puts a Cast(to=float16|bfloat16) in front of each parameter's low
// consumers, so the training graph as built casts every weight on every run: once per
// micro-batch, reading the float32 weight and writing the copy each time. On the CPU, with
// TrainerConfig::weight_copies (`train --weight-copies`), the trainer folds those Casts out
// of the graph it runs: their outputs become graph inputs, fed from copies the trainer
// keeps, and the update op rewrites each copy from the new weight in its own pass
// (update_graph.h), while the new weight is still in cache. A copy is then made once per
// optimizer step, whatever the micro-batch count; the copies stay in memory between steps,
// where the Casts' outputs lived only within one. The bits do not change: the update
// rounds to nearest even, as Cast does.
//
// On a device the training graph keeps its Casts: the device's update kernels do not
// write copies.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/io/named_tensor.h"

namespace onnx_amp {

struct FoldedWeightCasts {
  onnx::ModelProto model;  // the training graph without the folded Casts
  // Per parameter: its copy's type (kUndefined where no Cast was folded), and the graph
  // inputs the copy feeds (the folded Casts' outputs).
  std::vector<DType> copy_types;
  std::vector<std::vector<std::string>> copy_inputs;
};

// Folds each ai.onnx Cast of a parameter (a graph input of `train_model`) to float16 or
// bfloat16 whose output is not a graph output. A parameter cast to both types (no
// converter does that) has only its Casts to the first type it meets folded.
FoldedWeightCasts FoldWeightCasts(const onnx::ModelProto& train_model, const std::vector<NamedTensor>& parameters);

// `weight` (float32) rounded to `type` (float16 or bfloat16), to nearest even: the copy
// the update keeps up to date, made afresh.
Tensor MakeWeightCopy(const Tensor& weight, DType type);

}  // namespace onnx_amp
