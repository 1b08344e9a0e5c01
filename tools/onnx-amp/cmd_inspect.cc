// `onnx-amp inspect MODEL [--json]`: opsets, IR version, producer, inputs and outputs,
// node counts, parameters, and subgraphs of a model.
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/graph/graph_view.h"
#include "runtime/onnx/model_io.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/model_summary.h"
#include "tools/onnx-amp/summary_format.h"

namespace onnx_amp {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
};

Status RunInspect(const InspectOptions& options) {
  LoadOptions load_options;
  // Inspect reads only dims and types: external data is validated but not read, and
  // models with opsets newer than this build are still summarized.
  load_options.load_external_data = false;
  load_options.check_opsets = false;
  ONNX_AMP_ASSIGN_OR_RETURN(const onnx::ModelProto model, LoadModel(options.model, load_options));
  Expected<std::unique_ptr<ModelView>> view = BuildModelView(model);
  if (!view.ok()) return view.status().WithContext(options.model);
  Expected<ModelSummary> summary = SummarizeModel(**view);
  if (!summary.ok()) return summary.status().WithContext(options.model);

  std::string text;
  if (options.json) {
    // Names come from the model: invalid UTF-8 is replaced rather than rejected.
    text = SummaryJson(*summary).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else {
    text = SummaryText(options.model, *summary);
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
  runner.Bind(*command, [options] { return RunInspect(*options); });
}

}  // namespace onnx_amp
