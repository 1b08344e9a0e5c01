// Accuracy-driven conversion (convert --auto): finds a small set of nodes to keep in
// float32 so that the converted model validates on every sample.
//
//  1. Range screening (runtime/validate/range_screen.h) runs the samples in float32 and
//     denies every node the painting runs low whose output the low dtype cannot hold.
//  2. Convert and validate. While validation fails: take the painted regions of the
//     current conversion (connected low-precision components, painted_regions.h),
//     bisect over them - deny the first half of the candidates; if the model then
//     validates, the culprit is in that half, else in the other - down to one region,
//     then bisect over that region's nodes the same way, deny the node found, and
//     REPAINT: convert again from the original model with the grown denial set.
// Denials reach the converter as an exact, anchored, escaped node-name alternation in
// the policy's fp32_nodes regex (kept alongside the user's own pattern). Every
// (denial set -> validation) result is cached, so no set is validated twice. Nodes
// without names get one first ("onnx_amp_node_<index>"), since denial works by name.
// Each round denies one more node, so the search ends after at most one round per node.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "runtime/core/status.h"
#include "runtime/validate/range_screen.h"
#include "runtime/validate/validator.h"

namespace onnx_amp {

struct AutoConvertOptions {
  ConvertOptions convert;     // policy (Compile()d), target, opset
  ValidateOptions validate;   // tolerances
  bool screen_ranges = true;
};

enum class ForcedStage { kRangeScreen, kSearch };

struct ForcedNode {
  std::string node;
  std::string op_type;
  ForcedStage stage = ForcedStage::kSearch;
  std::string value;          // the value that did not fit (screen) or diverged first (search)
  double magnitude = 0.0;     // screen: max|x| in float32; search: max abs error of `value`
  bool non_finite = false;    // search: `value` turned inf/NaN
  std::string reason;         // one line for people
};

struct AutoConvertReport {
  bool passed = false;
  int validation_runs = 0;
  int rounds = 0;             // validations of a repainted model (one per denial round)
  int regions_searched = 0;   // painted regions bisected over, summed over rounds
  int nodes_searched = 0;     // nodes bisected over inside guilty regions, summed over rounds
  std::vector<ForcedNode> forced;  // in the order they were denied
  ValidationReport validation;     // of the returned model
};

struct AutoConvertResult {
  ConvertResult conversion;
  AutoConvertReport search;
};

std::string_view ForcedStageName(ForcedStage stage);

// Errors: those of conversion and validation; kNumeric when the model still fails with
// every painted region in float32 (the float32 parts themselves differ, or the
// tolerances are too tight), naming the first divergence.
Expected<AutoConvertResult> AutoConvert(const onnx::ModelProto& model, const std::vector<Feeds>& samples,
                                        const AutoConvertOptions& options);

}  // namespace onnx_amp
