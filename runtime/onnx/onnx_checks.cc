#include "runtime/onnx/onnx_checks.h"

#include <exception>
#include <string>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "runtime/onnx/external_data.h"
#include "runtime/onnx/inference_guards.h"

namespace onnx_amp {

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

}  // namespace onnx_amp
