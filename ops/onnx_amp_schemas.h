// ONNX schemas of the ops of domain "ai.onnx_amp" (version 1): the fused gradient ops,
// the losses and the optimizer-step ops. Each family lists its own (<family>_schemas.cc,
// next to its kernels); RegisterOnnxAmpOpSchemas registers them all with ONNX's
// OpSchemaRegistry so that the checker and shape inference accept training and update
// graphs.
#pragma once

#include <vector>

#include <onnx/defs/schema.h>

namespace onnx_amp {

// Registers the domain and every schema once per process; later calls do nothing.
void RegisterOnnxAmpOpSchemas();

// Each family's schemas of domain ai.onnx_amp.
std::vector<onnx::OpSchema> ElementwiseOnnxAmpSchemas();    // ops/elementwise: ReluGrad, SigmoidGrad, TanhGrad, GeluGrad
std::vector<onnx::OpSchema> NormalizationOnnxAmpSchemas();  // ops/normalization: Softmax/LogSoftmax/LayerNorm/BatchNorm grads, the losses
std::vector<onnx::OpSchema> ConvOnnxAmpSchemas();           // ops/conv: ConvGrad, MaxPoolGrad, AveragePoolGrad
std::vector<onnx::OpSchema> TensorOnnxAmpSchemas();         // ops/tensor: GatherGrad
std::vector<onnx::OpSchema> TrainingOnnxAmpSchemas();       // ops/training: UnscaleAndCheck, GlobalNormClip, the updates

}  // namespace onnx_amp
