#include "converter/convert_model.h"

#include <onnx/version_converter/convert.h>

#include "converter/paint.h"
#include "converter/passes/convert_initializers.h"
#include "converter/passes/insert_casts.h"
#include "converter/passes/retarget_casts.h"
#include "converter/passes/retype_values.h"
#include "converter/passes/rewrite_attributes.h"
#include "converter/passes/unique_names.h"
#include "runtime/onnx/onnx_checks.h"

namespace onnx_amp {
namespace {

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 0;
}

Expected<onnx::ModelProto> ChangeOpset(const onnx::ModelProto& model, int64_t opset) {
  const int64_t current = DefaultOpset(model);
  if (opset == current) return model;
  try {
    return onnx::version_conversion::ConvertVersion(model, static_cast<int>(opset));
  } catch (const std::exception& e) {
    return InvalidArgument("--opset " + std::to_string(opset) + ": cannot convert the model from opset " +
                           std::to_string(current) + ": " + e.what());
  }
}

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

// The main graph keeps its I/O names, and the kept ones their dtypes.
Status CheckInterface(const onnx::GraphProto& before, const onnx::GraphProto& after, const KeepIoTypes& keep) {
  auto compare = [&](const auto& old_list, const auto& new_list, const char* what) -> Status {
    if (old_list.size() != new_list.size()) {
      return InternalError(std::string("the converted model has a different number of graph ") + what + "s");
    }
    for (int k = 0; k < old_list.size(); ++k) {
      const auto& old_info = old_list.Get(k);
      const auto& new_info = new_list.Get(k);
      if (old_info.name() != new_info.name()) {
        return InternalError(std::string("graph ") + what + " '" + old_info.name() + "' was renamed to '" +
                             new_info.name() + "'");
      }
      if (keep.Keeps(old_info.name()) &&
          old_info.type().tensor_type().elem_type() != new_info.type().tensor_type().elem_type()) {
        return InternalError(std::string("graph ") + what + " '" + old_info.name() +
                             "' changed dtype although keep-io-types keeps it");
      }
    }
    return Status::Ok();
  };
  ONNX_AMP_RETURN_IF_ERROR(compare(before.input(), after.input(), "input"));
  return compare(before.output(), after.output(), "output");
}

Status Verify(const onnx::ModelProto& before, const onnx::ModelProto& after, const ConvertOptions& options) {
  // A failure here is a converter bug: the input passed the same checks.
  const bool portable = options.target == ConvertTarget::kPortable;
  Status checked = CheckModel(after, /*full_check=*/portable);
  if (!checked.ok()) return InternalError("the converted model fails verification: " + checked.message());
  if (portable) {
    onnx::ModelProto copy = after;
    Status inferred = InferShapes(copy, /*strict=*/true);
    if (!inferred.ok()) return InternalError("the converted model fails verification: " + inferred.message());
  }
  return CheckInterface(before.graph(), after.graph(), options.policy.keep_io_types);
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
  Status checked = CheckModel(model, /*full_check=*/false);
  if (!checked.ok()) return checked.WithContext("input model");
  ConvertResult result;
  if (options.opset) {
    ONNX_AMP_ASSIGN_OR_RETURN(result.model, ChangeOpset(model, *options.opset));
  } else {
    result.model = model;
  }
  const onnx::ModelProto before = result.model;

  ONNX_AMP_ASSIGN_OR_RETURN(ValueTypeMap types, InferValueTypes(result.model));
  ONNX_AMP_ASSIGN_OR_RETURN(ConversionPlan plan, Paint(result.model, types, options.policy, options.target));

  ConversionReport& report = result.report;
  report.policy = std::string(PolicyKindName(options.policy.kind));
  report.target = std::string(ConvertTargetName(options.target));
  report.opset = DefaultOpset(result.model);
  AddPlanToReport(plan, report);

  if (IsLowPrecision(plan.low_type)) {  // the float32 policy paints nothing
    UniqueNames names(result.model);
    RetargetCasts(plan, report);
    ONNX_AMP_RETURN_IF_ERROR(RewriteAttributes(plan, report));
    ONNX_AMP_RETURN_IF_ERROR(ConvertInitializers(plan, names, report));
    ONNX_AMP_RETURN_IF_ERROR(InsertCasts(plan, names, report));
    RetypeValues(plan);
  }
  if (options.target == ConvertTarget::kOnnxAmp) SetMetadata(result.model, kTargetMetadataKey, "onnx-amp");

  ONNX_AMP_RETURN_IF_ERROR(Verify(before, result.model, options));
  return result;
}

}  // namespace onnx_amp
