// Building blocks of the ONNX schemas of domain "ai.onnx_amp", shared by the families'
// schema lists (ops/onnx_amp_schemas.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>

namespace onnx_amp {

inline const std::vector<std::string> kFloatTypes = {"tensor(float16)", "tensor(float)", "tensor(bfloat16)",
                                                     "tensor(double)"};
inline const std::vector<std::string> kIndexTypes = {"tensor(int32)", "tensor(int64)"};

// A schema of domain "ai.onnx_amp", version 1.
onnx::OpSchema NewSchema(const char* name);
// Output `output` gets the element type of input `type_from` and the shape of `shape_from`.
void Propagate(onnx::InferenceContext& context, size_t type_from, size_t shape_from, size_t output);
// A fused element-wise gradient: (dY, `second`) -> dX, all of one floating type.
onnx::OpSchema PointwiseGradSchema(const char* name, const char* second);

}  // namespace onnx_amp
