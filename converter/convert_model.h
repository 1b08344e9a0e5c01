// ConvertModel: the conversion pipeline. Infers types, paints (paint.h), runs the
// passes (converter/passes/, in this order: retarget_casts, rewrite_attributes,
// convert_initializers, insert_casts, retype_values) and verifies the result before
// anyone writes it: the ONNX checker (full for target portable), strict type
// inference, and unchanged I/O names and kept I/O dtypes.
#pragma once

#include <optional>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "converter/plan.h"
#include "converter/precision_policy.h"
#include "converter/report.h"
#include "runtime/core/status.h"

namespace onnx_amp {

std::string_view ConvertTargetName(ConvertTarget target);
Expected<ConvertTarget> ParseConvertTarget(std::string_view name);

struct ConvertOptions {
  PrecisionPolicy policy;  // Compile()d by the caller
  ConvertTarget target = ConvertTarget::kPortable;
  std::optional<int64_t> opset;  // default-domain opset of the output; nullopt keeps the model's
};

struct ConvertResult {
  onnx::ModelProto model;
  ConversionReport report;
};

// Errors: kInvalidModel when the input fails the checker or type inference;
// kInvalidArgument for an opset the version converter cannot reach; kInternal when
// the converted model fails verification.
Expected<ConvertResult> ConvertModel(const onnx::ModelProto& model, const ConvertOptions& options);

// The metadata key recording a non-portable conversion.
inline constexpr const char* kTargetMetadataKey = "onnx_amp.target";

}  // namespace onnx_amp
