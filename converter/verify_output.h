// How ConvertModel checks the model it wrote before anyone saves it. A failure is a
// converter bug (the input passed the same checks), reported as kInternal naming what
// broke.
//
//   default  what conversion can break, in one pass over the model (linear time):
//            every value defined once and before it is read (the placement of new Casts);
//            the schema type constraints of every node that reads or writes a float16 or
//            bfloat16 value and of every Cast (target portable only: the onnx-amp target
//            runs any op, Cast included, in any float dtype); every declared type
//            (value_info, graph outputs, body inputs) equal to the type its producer gives;
//            converted float16/bfloat16 tensors holding as many values as their dims say;
//            the main graph's input and output names unchanged and the kept ones' dtypes.
//   full     ONNX's checker and strict shape inference with data propagation (the full
//            check; target portable), and the same input/output check: about as slow as
//            converting again. For models whose converted form must satisfy every ONNX
//            consumer's inference, or to rule out a converter bug.
//   none     no check.
// ConvertModel verifies a model whose opset it changed (raised or pinned) in full at the
// default level: the version converter's output can break what only strict shape
// inference sees (Resize-13 reading a converted empty `scales` next to `sizes`), and a
// raised conversion then falls back to the model's own opset.
#pragma once

#include <filesystem>
#include <string_view>

#include "converter/plan.h"
#include "converter/precision_policy.h"
#include "runtime/core/status.h"

namespace onnx { class GraphProto; class ModelProto; }

namespace onnx_amp {

enum class VerifyLevel { kDefault, kFull, kNone };

std::string_view VerifyLevelName(VerifyLevel level);
// "default", "full" or "none"; the error names the flag.
Expected<VerifyLevel> ParseVerifyLevel(std::string_view name);

struct VerifyOptions {
  VerifyLevel level = VerifyLevel::kDefault;
  ConvertTarget target = ConvertTarget::kPortable;
  KeepIoTypes keep_io_types;
  // Where the model's external data resolves (the ONNX checker reads it there); empty
  // when the model holds its data.
  std::filesystem::path external_data_folder;
};

// Checks `converted` at `options.level`; `original_io` holds the input model's main
// graph inputs and outputs (its nodes are not needed). `converted` is left as it was.
Status VerifyConvertedModel(const onnx::GraphProto& original_io, onnx::ModelProto& converted,
                            const VerifyOptions& options);

}  // namespace onnx_amp
