// `onnx-amp inspect MODEL [--json] [policy flags]`: opsets, IR version, producer, inputs
// and outputs, node counts, parameters, and subgraphs of a model. With any policy flag
// (policy_flags.h, opset_flags.h) it also shows what a conversion would do, without
// writing anything: the output opset and why, each node's dtype and reason, Casts,
// clamped initializers, unknown ops, and the Tensor Core misses (precision_summary.h).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "runtime/graph/graph_view.h"
#include "runtime/onnx/model_io.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/model_summary.h"
#include "tools/onnx-amp/opset_flags.h"
#include "tools/onnx-amp/policy_flags.h"
#include "tools/onnx-amp/precision_summary.h"
#include "tools/onnx-amp/summary_format.h"

namespace onnx_amp {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  PolicyFlags policy;
  OpsetFlags opset;
};

Status RunInspect(const InspectOptions& options) {
  const bool with_precision = options.policy.AnyGiven() || options.opset.AnyGiven();
  std::optional<ConvertOptions> convert_options;
  if (with_precision) {
    ONNX_AMP_ASSIGN_OR_RETURN(convert_options, BuildPolicyOptions(options.policy));
    ONNX_AMP_RETURN_IF_ERROR(ApplyOpsetFlags(options.opset, *convert_options));
  }
  LoadOptions load_options;
  // Inspect alone reads only dims and types: external data is validated but not read,
  // and models with opsets newer than this build are still summarized. A conversion
  // needs the weights (clamping) and a supported opset.
  load_options.load_external_data = with_precision;
  load_options.check_opsets = with_precision;
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(options.model, load_options));
  Expected<std::unique_ptr<ModelView>> view = BuildModelView(model);
  if (!view.ok()) return view.status().WithContext(options.model);
  Expected<ModelSummary> summary = SummarizeModel(**view);
  if (!summary.ok()) return summary.status().WithContext(options.model);
  std::optional<PrecisionSummary> precision;
  if (convert_options) {
    Expected<PrecisionSummary> result = SummarizePrecision(model, **view, *convert_options);
    if (!result.ok()) return result.status().WithContext(options.model);
    precision = std::move(*result);
  }

  std::string text;
  if (options.json) {
    // Names come from the model: invalid UTF-8 is replaced rather than rejected.
    nlohmann::ordered_json json = SummaryJson(*summary);
    if (precision) json["precision"] = PrecisionJson(*precision);
    text = json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else {
    text = SummaryText(options.model, *summary);
    if (precision) text += PrecisionText(*precision);
  }
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return IoError("cannot write to standard output");
  }
  return Status::Ok();
}

}  // namespace

void AddInspectCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Summarize a model: opsets, inputs and outputs, op counts, parameters, subgraphs");
  command->add_option("MODEL", options->model, "ONNX model file")->required();
  command->add_flag("--json", options->json, "Print the summary as JSON");
  AddPolicyFlags(*command, options->policy);
  AddOpsetFlags(*command, options->opset);
  runner.Bind(*command, [options] { return RunInspect(*options); });
}

}  // namespace onnx_amp
