// ConvertModel: the conversion pipeline. Checks the input (the ONNX checker), settles
// the output opset and infers types (opset_upgrade.h), paints (paint.h), runs the passes
// (converter/passes/pass_list.h, which gives their order) and verifies the result before
// anyone writes it (verify_output.h: by default what conversion can break, in linear
// time; `full` adds ONNX's checker and strict shape inference).
//
// Large models: a model loaded with its large tensors left in their external files
// (LoadOptions::keep_external_from_bytes) is converted without reading them; they are
// converted chunk by chunk when SaveConvertedModel writes the output's external data.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "converter/passes/convert_initializers.h"
#include "converter/plan.h"
#include "converter/precision_policy.h"
#include "converter/report.h"
#include "converter/verify_output.h"
#include "runtime/onnx/model_io.h"
#include "runtime/core/status.h"

namespace onnx_amp {

std::string_view ConvertTargetName(ConvertTarget target);
Expected<ConvertTarget> ParseConvertTarget(std::string_view name);

struct ConvertOptions {
  PrecisionPolicy policy;  // Compile()d by the caller
  ConvertTarget target = ConvertTarget::kPortable;
  // Default-domain opset of the output: nullopt settles it (converter/opset_upgrade.h),
  // raising it where ops that would run low need a newer one unless keep_opset is set.
  std::optional<int64_t> opset;
  bool keep_opset = false;
  VerifyLevel verify = VerifyLevel::kDefault;  // how the output is checked (verify_output.h)
  // Fill report.nodes (every node's dtype and the reason); without it the report keeps
  // only its counts, and Paint builds no per-node reason text (large graphs).
  bool node_report = true;
  // Where the model's external data locations resolve (the input model's folder) when it
  // was loaded with tensors left in their files; empty when it holds all its data.
  std::filesystem::path external_data_folder;
};

struct ConvertResult {
  onnx::ModelProto model;
  ConversionReport report;  // report.clamped lacks the streamed tensors until written
  std::filesystem::path external_data_folder;  // ConvertOptions::external_data_folder
  StreamedInitializers streamed;
};

// Errors: kInvalidModel when the input fails the checker or type inference;
// kInvalidArgument for a pinned opset the version converter cannot reach, or for
// keep_opset with a pinned opset; kInternal when the converted model fails verification.
Expected<ConvertResult> ConvertModel(const onnx::ModelProto& model, const ConvertOptions& options);
// The same, converting `model` in place instead of a copy of it.
Expected<ConvertResult> ConvertModel(onnx::ModelProto&& model, const ConvertOptions& options);

// Writes result.model to `path` (SaveModel). When tensors are still in external files,
// streams them into the output's external data file (SaveModelStreaming), converting
// the streamed initializers on the way, and then adds their clamp records to
// result.report. result.model then refers to the written data file.
Status SaveConvertedModel(ConvertResult& result, const std::filesystem::path& path, const SaveOptions& options = {});

// The metadata key recording a non-portable conversion.
inline constexpr const char* kTargetMetadataKey = "onnx_amp.target";

}  // namespace onnx_amp
