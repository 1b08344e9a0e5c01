// ONNX_AMP_HD marks per-element math shared by CPU kernels and CUDA kernels, so that
// the CPU tests exercise the exact arithmetic the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define ONNX_AMP_HD __host__ __device__ __forceinline__
#else
#define ONNX_AMP_HD inline
#endif
