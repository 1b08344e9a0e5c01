// The reduction families, one registration function per file of this folder;
// reduction_cpu.cc calls them all.
#pragma once

namespace onnx_amp {

class KernelRegistry;

void RegisterReduceCpuKernels(KernelRegistry& registry);     // reduce_cpu.cc: Reduce*
void RegisterArgReduceCpuKernels(KernelRegistry& registry);  // arg_reduce_cpu.cc: ArgMax, ArgMin
void RegisterCumSumCpuKernels(KernelRegistry& registry);     // cumsum_cpu.cc
void RegisterTopKCpuKernels(KernelRegistry& registry);       // topk_cpu.cc

}  // namespace onnx_amp
