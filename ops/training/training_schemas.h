// ONNX schemas of the fused gradient and optimizer-step ops (domain "ai.onnx_amp",
// version 1), registered with ONNX's OpSchemaRegistry so that the checker and shape
// inference accept training and update graphs. Kernels: ops/training/training_kernels.h.
#pragma once

namespace onnx_amp {

// Registers the domain and every schema once per process; later calls do nothing.
void RegisterTrainingOpSchemas();

}  // namespace onnx_amp
