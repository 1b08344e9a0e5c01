// ONNX schemas of the ops of domain "ai.onnx_amp" (version 1): the fused gradient and
// optimizer-step ops, and the losses (ops/normalization/loss_schemas.h), registered with
// ONNX's OpSchemaRegistry so that the checker and shape inference accept training and
// update graphs. Kernels: ops/training/training_kernels.h, ops/normalization/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>

namespace onnx_amp {

// Registers the domain and every schema once per process; later calls do nothing.
void RegisterTrainingOpSchemas();

// Shared by the schema lists of the op families (e.g. ops/normalization/loss_schemas.cc).
inline const std::vector<std::string> kFloatTypes = {"tensor(float16)", "tensor(float)", "tensor(bfloat16)",
                                                     "tensor(double)"};
inline const std::vector<std::string> kIndexTypes = {"tensor(int32)", "tensor(int64)"};
// A schema of domain "ai.onnx_amp", version 1.
onnx::OpSchema NewSchema(const char* name);
// Output `output` gets the element type of input `type_from` and the shape of `shape_from`.
void Propagate(onnx::InferenceContext& context, size_t type_from, size_t shape_from, size_t output);

}  // namespace onnx_amp
