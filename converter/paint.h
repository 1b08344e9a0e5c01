// Paint: decides, for every (node, type variable) unit of a model, whether it runs in
// the low dtype or in float32 (converter-anchors (c), steps 2-10), and records why.
//
// A unit is one node's inputs and outputs bound to one type variable of its ONNX
// schema ("T" of Add binds A, B and C); they share one colour. The steps, on the graph
// of units linked by the tensors between them:
//   2 eligible: all of the unit's tensors are float32, the op is not fixed-fp32, and
//     (target portable) the schema at the model opset admits the low dtype for it;
//   2 also: a policy `hardware` without fast arithmetic in the low dtype keeps all float32;
//   3/4 seeds: deny and allow classes of ops.def after user overrides; shape
//     arithmetic between integer Casts is kept float32; (mixed_float16) epsilon
//     guards x/(y+eps) with eps below float16's smallest normal are denied; (mixed
//     policies) init_max/data_max: constants or recorded values beyond the low dtype's
//     largest finite number; Exp->ReduceSum/Mean paths; decomposed LayerNorm
//     statistics; reductions over at least 2^p elements (p significand bits);
//   5 deny floods forward through infer units and through clear units upstream of
//     deny/infer ones; 6 infer/clear units between allow units become allow;
//   7 (bfloat16) infer units fed by allow and by no deny become allow;
//   8 allow spreads through clear units both ways;
//   9 colour matching: each If output with its branch outputs, each Loop/Scan carried
//     value with the body's input and output for it and the node's output (and each
//     scan slice with its body counterpart) form a cluster of clear member units,
//     linked along the recurrent edges, so colours flow around the loop. A cluster is
//     low only when every member is; otherwise all of it is float32 and steps 5-9
//     repeat to a fixpoint. A member that reads or writes a kept main-graph input or
//     output is float32, so main-graph outputs always keep float32;
//   10 Cast(to=float) is retargeted when every consumer is low.
// Bodies are painted with the rest of the model, so their Casts land inside them.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "converter/plan.h"
#include "converter/precision_policy.h"
#include "converter/value_table.h"
#include "runtime/core/status.h"

namespace onnx { class ModelProto; }

namespace onnx_amp {

// Every value of `model` (all scopes) with its element type (runtime/onnx/type_inference.h;
// kUndefined for values that are no tensors or that no rule types).
// Fails (kInvalidModel) when a node's types break its schema's type constraints.
Expected<ValueTable> InferValueTypes(const onnx::ModelProto& model);

// Paints `model`, whose values are `values` (the plan's values after painting, with the
// types they have in the output).
// The value rules read float32 constants in memory themselves and those left in external
// files from `external`. The plan keeps pointers into `model`, which must outlive it.
// Without `with_reasons` every NodePlan::reason is left empty (nothing reports them).
Expected<ConversionPlan> Paint(onnx::ModelProto& model, ValueTable values, const PrecisionPolicy& policy,
                               ConvertTarget target, const ValueSummaries& external, bool with_reasons = true);

}  // namespace onnx_amp
