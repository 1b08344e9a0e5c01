#include "converter/convert_model.h"

#include <cstdint>
#include <future>
#include <optional>
#include <utility>

#include "converter/opset_upgrade.h"
#include "converter/paint.h"
#include "converter/paint_seeds.h"
#include "converter/passes/pass_list.h"
#include "converter/passes/unique_names.h"
#include "converter/verify_output.h"
#include "runtime/onnx/external_data.h"
#include "runtime/onnx/external_stream.h"
#include "runtime/onnx/folder_checks.h"
#include "runtime/onnx/onnx_checks.h"
#include "runtime/onnx/tensor_walk.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

void SetMetadata(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  for (auto& entry : *model.mutable_metadata_props()) {
    if (entry.key() == key) {
      entry.set_value(value);
      return;
    }
  }
  auto* entry = model.add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

// Summaries of the float32 tensors still in their external files, read chunk by chunk,
// for Paint's value rules.
Expected<ValueSummaries> SummarizeExternalTensors(const onnx::ModelProto& model, const std::filesystem::path& folder) {
  ValueSummaries summaries;
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(model, [&](const onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (tensor.data_type() != onnx::TensorProto::FLOAT || tensor.data_location() != onnx::TensorProto::EXTERNAL) {
      return Status::Ok();
    }
    MagnitudeSummary summary;
    ONNX_AMP_RETURN_IF_ERROR(ReadExternalChunks(tensor, folder, sizeof(float), [&](const char* data, size_t size) {
                               summary.AddBytes(data, size);
                             }).WithContext(DescribeTensor(tensor, node_name)));
    summaries[&tensor] = summary.Summary();
    return Status::Ok();
  }));
  return summaries;
}

// Paints result.model, whose opset is settled, and runs the passes on it. The plan and
// the type map are freed on return, before verification.
Status PaintAndRewrite(ConvertResult& result, const ConvertOptions& options, SettledOpset settled) {
  ValueTable values = std::move(settled.types);
  ValueSummaries external;
  if (!options.external_data_folder.empty() && options.policy.IsMixed()) {  // only their value rules read them
    ONNX_AMP_ASSIGN_OR_RETURN(external, SummarizeExternalTensors(result.model, options.external_data_folder));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(ConversionPlan plan,
                            Paint(result.model, std::move(values), options.policy, options.target, external,
                                  options.node_report));

  ConversionReport& report = result.report;
  report.policy = std::string(PolicyKindName(options.policy.kind));
  report.target = std::string(ConvertTargetName(options.target));
  report.hardware = std::string(TargetHardwareName(options.policy.hardware));
  report.opset = DefaultOpset(result.model);
  report.opset_decision = std::move(settled.decision);
  AddPlanToReport(plan, report, options.node_report);

  if (IsLowPrecision(plan.low_type)) {  // the float32 policy paints nothing
    UniqueNames names(result.model, plan.values);
    PassContext context{plan, names, report, result.streamed};
    ONNX_AMP_RETURN_IF_ERROR(RunConversionPasses(context));
  }
  return Status::Ok();
}

// Paints `model`, whose opset is settled, runs the passes and verifies the result.
Expected<ConvertResult> ConvertSettled(onnx::ModelProto&& model, SettledOpset settled, const onnx::GraphProto& before,
                                       const ConvertOptions& options) {
  VerifyLevel level = options.verify;
  // The version converter changed the opset: its output is verified in full (verify_output.h).
  if (level == VerifyLevel::kDefault && settled.decision.to != settled.decision.from) level = VerifyLevel::kFull;
  ConvertResult result;
  result.external_data_folder = options.external_data_folder;
  result.model = std::move(model);
  ONNX_AMP_RETURN_IF_ERROR(PaintAndRewrite(result, options, std::move(settled)));
  if (options.target == ConvertTarget::kOnnxAmp) SetMetadata(result.model, kTargetMetadataKey, "onnx-amp");
  const VerifyOptions verify{level, options.target, options.policy.keep_io_types, options.external_data_folder};
  ONNX_AMP_RETURN_IF_ERROR(VerifyConvertedModel(before, result.model, verify));
  return result;
}

}  // namespace

std::string_view ConvertTargetName(ConvertTarget target) {
  switch (target) {
    case ConvertTarget::kPortable: return "portable";
    case ConvertTarget::kOnnxAmp: return "onnx-amp";
  }
  return "?";
}

Expected<ConvertTarget> ParseConvertTarget(std::string_view name) {
  if (name == "portable") return ConvertTarget::kPortable;
  if (name == "onnx-amp") return ConvertTarget::kOnnxAmp;
  return InvalidArgument("--target: unknown target '" + std::string(name) + "' (expected portable or onnx-amp)");
}

Expected<ConvertResult> ConvertModel(const onnx::ModelProto& model, const ConvertOptions& options) {
  return ConvertModel(onnx::ModelProto(model), options);
}

Expected<ConvertResult> ConvertModel(onnx::ModelProto&& model, const ConvertOptions& options) {
  // The ONNX checker and type inference only read the input: they run side by side, and
  // the checker's verdict still comes first.
  std::future<Status> checking = std::async(std::launch::async, [&model, &options] {
    return CheckModelWithData(model, options.external_data_folder);
  });
  Expected<ValueTable> inferred = InferValueTypes(model);
  Status checked = checking.get();
  if (!checked.ok()) return checked.WithContext("input model");
  onnx::GraphProto before;
  *before.mutable_input() = model.graph().input();
  *before.mutable_output() = model.graph().output();

  const OpsetRequest opset_request{options.opset, options.keep_opset};
  ONNX_AMP_ASSIGN_OR_RETURN(SettledOpset settled, SettleOpset(model, opset_request, options.policy, options.target,
                                                              options.external_data_folder, std::move(inferred)));
  std::optional<onnx::ModelProto> unraised = std::move(settled.unraised);
  const int64_t raised_to = settled.decision.to;
  Expected<ConvertResult> result = ConvertSettled(std::move(model), std::move(settled), before, options);
  if (result.ok() || !unraised) return result;
  // The version converter's output can fail where the model itself passes: convert at
  // the model's own opset instead, saying why.
  ONNX_AMP_ASSIGN_OR_RETURN(SettledOpset kept, SettleAfterFailedRaise(*unraised, raised_to, result.status(),
                                                                      options.policy, options.target));
  return ConvertSettled(std::move(*unraised), std::move(kept), before, options);
}

Status SaveConvertedModel(ConvertResult& result, const std::filesystem::path& path, const SaveOptions& options) {
  // Without tensors left in files, the output is saved as any model is (one file when small).
  if (result.external_data_folder.empty() || RequireDataInMemory(result.model).ok()) {
    return SaveModel(result.model, path, options);
  }
  ExternalSources sources;
  sources.folder = result.external_data_folder;
  sources.transforms = std::move(result.streamed.transforms);
  ONNX_AMP_RETURN_IF_ERROR(SaveModelStreaming(result.model, path, sources, options));
  for (const auto& record : result.streamed.records) {
    if (record->clamped > 0 || record->flushed_to_zero > 0) result.report.clamped.push_back(*record);
  }
  return Status::Ok();
}

}  // namespace onnx_amp
