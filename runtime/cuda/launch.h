// Launch arithmetic of the CUDA kernels, host-only so that the CPU tests cover it:
// grid-stride element-wise launches, and the split of row-wise work (softmax, norms,
// reductions) between warps and blocks.
#pragma once

#include <algorithm>
#include <cstdint>

namespace onnx_amp {

struct LaunchShape {
  int64_t blocks = 1;
  int threads = 256;
};

inline constexpr int kWarpSize = 32;
inline constexpr int kElementwiseThreads = 256;
// Blocks per multiprocessor a grid-stride launch asks for: enough resident warps to
// hide memory latency (8 blocks of 256 threads = 64 warps, the Hopper maximum).
inline constexpr int kBlocksPerMultiprocessor = 8;

// A grid-stride launch over `elements`, each thread taking `per_thread` consecutive
// elements per pass: no more blocks than the work needs, no more than fill the device
// (`multiprocessors` of it) once; at least one block.
inline LaunchShape ElementwiseLaunch(int64_t elements, int multiprocessors, int per_thread = 1) {
  LaunchShape shape;
  shape.threads = kElementwiseThreads;
  const int64_t per_block = static_cast<int64_t>(shape.threads) * std::max(per_thread, 1);
  const int64_t needed = (std::max<int64_t>(elements, 0) + per_block - 1) / per_block;
  const int64_t resident = static_cast<int64_t>(std::max(multiprocessors, 1)) * kBlocksPerMultiprocessor;
  shape.blocks = std::max<int64_t>(1, std::min(needed, resident));
  return shape;
}

// Row-wise kernels: rows of `length` elements. Short rows go one warp per row (several
// rows per block, no block-wide barrier); long rows one block per row.
struct RowLaunch {
  bool warp_per_row = true;
  int threads = 256;        // per block
  int rows_per_block = 8;   // warp_per_row only
  int64_t blocks = 1;
};

inline constexpr int64_t kWarpRowLimit = 1024;  // longest row a warp takes alone

inline RowLaunch RowWiseLaunch(int64_t rows, int64_t length) {
  RowLaunch launch;
  rows = std::max<int64_t>(rows, 1);
  if (length <= kWarpRowLimit) {
    launch.warp_per_row = true;
    launch.rows_per_block = launch.threads / kWarpSize;
    launch.blocks = (rows + launch.rows_per_block - 1) / launch.rows_per_block;
  } else {
    launch.warp_per_row = false;
    launch.threads = length >= 4096 ? 1024 : 512;
    launch.rows_per_block = 1;
    launch.blocks = rows;
  }
  return launch;
}

// CUDA's grid limit in x (2^31 - 1) leaves room for every launch above; y and z are
// 65535, so kernels that index rows take them from x.
inline constexpr int64_t kMaxGridX = 2147483647;

}  // namespace onnx_amp
