// The element-wise families, one registration function per file of this folder;
// elementwise_cpu.cc calls them all.
#pragma once

namespace onnx_amp {

class KernelRegistry;

void RegisterUnaryMathCpuKernels(KernelRegistry& registry);         // unary_math_cpu.cc
void RegisterLaneUnaryCpuKernels(KernelRegistry& registry);         // lane_unary_cpu.cc
void RegisterActivationCpuKernels(KernelRegistry& registry);        // activations_cpu.cc, with the fused gradients
void RegisterBinaryArithmeticCpuKernels(KernelRegistry& registry);  // binary_arith_cpu.cc
void RegisterLogicCpuKernels(KernelRegistry& registry);             // logic_cpu.cc
void RegisterCompareCpuKernels(KernelRegistry& registry);           // compare_cpu.cc
void RegisterVariadicCpuKernels(KernelRegistry& registry);          // variadic_cpu.cc
void RegisterWhereCpuKernels(KernelRegistry& registry);             // where_cpu.cc
void RegisterClipCpuKernels(KernelRegistry& registry);              // clip_cpu.cc
void RegisterCastCpuKernels(KernelRegistry& registry);              // cast_cpu.cc

}  // namespace onnx_amp
