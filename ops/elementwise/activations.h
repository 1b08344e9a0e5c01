// The activation ops of the element-wise family, as one table (activations_cpu.cc): each
// row gives the op's CPU kernel and, where its gradient is one fused op of domain
// ai.onnx_amp (dX = dY * slope(X or Y)), that op's name and kernel. The kernel
// registration, the fused ops' schemas (elementwise_schemas.cc) and their gradient rules
// (elementwise_grad.cc) are all read from this table.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "runtime/exec/kernel.h"

namespace onnx_amp {

// The forward value a fused activation gradient reads besides dY.
enum class SlopeOf { kInput, kOutput };

struct Activation {
  std::string_view op;
  KernelFn forward;
  // The fused gradient op (domain ai.onnx_amp), its kernel, what it reads, and the
  // forward attributes it takes over; empty gradient_op when the gradient is not fused.
  std::string_view gradient_op = {};
  KernelFn gradient = nullptr;
  SlopeOf slope_of = SlopeOf::kInput;
  std::array<std::string_view, 2> attributes = {};
};

std::span<const Activation> Activations();
// The row of `op`, nullptr when `op` is no activation of the table.
const Activation* FindActivation(std::string_view op);

}  // namespace onnx_amp
