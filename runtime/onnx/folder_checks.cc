#include "runtime/onnx/folder_checks.h"

#include <exception>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

namespace onnx_amp {
namespace {

// onnx::checker::check_model(const ModelProto&, CheckerContext&) of ONNX 1.18, which is
// not exported; the exported overloads leave the model folder unset.
void CheckWithContext(const onnx::ModelProto& model, onnx::checker::CheckerContext& ctx) {
  if (!model.ir_version()) fail_check("The model does not have an ir_version set properly.");
  if (model.ir_version() > onnx::IR_VERSION) {
    fail_check("Your model ir_version ", model.ir_version(), " is higher than the checker's (", onnx::IR_VERSION, ").");
  }
  std::unordered_set<std::string> keys;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (!keys.insert(entry.key()).second) fail_check("Your model has duplicate keys in metadata_props.");
  }
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  std::unordered_map<std::string, int> opset_imports;
  for (const auto& opset_import : model.opset_import()) {
    opset_imports[opset_import.domain()] = static_cast<int>(opset_import.version());
  }
  if (model.ir_version() >= 3) {
    if (opset_imports.empty()) fail_check("model with IR version >= 3 must specify opset_import for ONNX");
  } else if (opset_imports.empty()) {
    opset_imports[onnx::ONNX_DOMAIN] = 1;
  } else {
    fail_check("model with IR version < 3 cannot have opset_import specified");
  }
  ctx.set_opset_imports(opset_imports);
  onnx::checker::LexicalScopeContext lex_ctx;
  onnx::checker::check_graph(model.graph(), ctx, lex_ctx);
  if (ctx.get_ir_version() >= 0x00000008) onnx::checker::check_model_local_functions(model, ctx, lex_ctx);
}

}  // namespace

Status CheckModelInFolder(const onnx::ModelProto& model, const std::filesystem::path& folder) {
  onnx::checker::CheckerContext ctx;
  ctx.set_model_dir(folder.string());
  try {
    CheckWithContext(model, ctx);
  } catch (const onnx::checker::ValidationError& error) {
    return InvalidModel(std::string("ONNX checker: ") + error.what());
  } catch (const std::exception& error) {
    return InvalidModel(std::string("ONNX checker: ") + error.what());
  }
  return Status::Ok();
}

}  // namespace onnx_amp
