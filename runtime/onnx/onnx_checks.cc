#include "runtime/onnx/onnx_checks.h"

#include <exception>
#include <string>
#include <vector>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "runtime/onnx/external_data.h"
#include "runtime/onnx/folder_checks.h"
#include "runtime/onnx/inference_guards.h"

namespace onnx_amp {
namespace {

// `graph` and every subgraph in it, at any depth.
void CollectGraphs(onnx::GraphProto& graph, std::vector<onnx::GraphProto*>& graphs) {
  graphs.push_back(&graph);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) CollectGraphs(*attr.mutable_g(), graphs);
      for (auto& sub : *attr.mutable_graphs()) CollectGraphs(sub, graphs);
    }
  }
}

}  // namespace

Status CheckModel(const onnx::ModelProto& model, bool full_check) {
  ONNX_AMP_RETURN_IF_ERROR(RequireDataInMemory(model));
  if (full_check) {
    ONNX_AMP_RETURN_IF_ERROR(CheckTensorsForInference(model));
    GuardShapeInference();
  }
  try {
    onnx::checker::check_model(model, full_check);
  } catch (const onnx::checker::ValidationError& error) {
    return InvalidModel(std::string("ONNX checker: ") + error.what());
  } catch (const onnx::InferenceError& error) {
    return InvalidModel(std::string("ONNX shape inference: ") + error.what());
  } catch (const std::exception& error) {
    return InvalidModel(std::string("ONNX checker: ") + error.what());
  }
  return Status::Ok();
}

Status InferShapes(onnx::ModelProto& model, bool strict) {
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/strict ? 1 : 0,
                                            /*data_prop_val=*/true);
  ONNX_AMP_RETURN_IF_ERROR(CheckTensorsForInference(model));
  GuardShapeInference();
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const onnx::InferenceError& error) {
    return InvalidModel(std::string("ONNX shape inference: ") + error.what());
  } catch (const onnx::checker::ValidationError& error) {
    return InvalidModel(std::string("ONNX shape inference: ") + error.what());
  } catch (const std::exception& error) {
    return InvalidModel(std::string("ONNX shape inference: ") + error.what());
  }
  return Status::Ok();
}

Status CheckModelWithData(const onnx::ModelProto& model, const std::filesystem::path& external_data_folder) {
  if (external_data_folder.empty()) return CheckModel(model, /*full_check=*/false);
  return CheckModelInFolder(model, external_data_folder);
}

Status InspectInferred(onnx::ModelProto& model, bool strict,
                       const std::function<void(const onnx::ModelProto&)>& inspect) {
  std::vector<onnx::GraphProto*> graphs;
  CollectGraphs(*model.mutable_graph(), graphs);
  std::vector<onnx::GraphProto> saved(graphs.size());
  for (size_t g = 0; g < graphs.size(); ++g) {
    *saved[g].mutable_input() = graphs[g]->input();
    *saved[g].mutable_output() = graphs[g]->output();
    *saved[g].mutable_value_info() = graphs[g]->value_info();
  }
  Status inferred = InferShapes(model, strict);
  if (inferred.ok() && inspect) inspect(model);
  for (size_t g = 0; g < graphs.size(); ++g) {
    graphs[g]->mutable_input()->Swap(saved[g].mutable_input());
    graphs[g]->mutable_output()->Swap(saved[g].mutable_output());
    graphs[g]->mutable_value_info()->Swap(saved[g].mutable_value_info());
  }
  return inferred;
}

}  // namespace onnx_amp
