#include "ops/training/update_cuda.h"

#include <algorithm>
#include <climits>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_numeric.cuh"
#include "runtime/cuda/launch.h"
#include "ops/training/gradient_math.h"
#include "ops/training/optimizer_math.h"

namespace onnx_amp {
namespace {

// Elements per block of a multi-tensor launch, and chunks per launch: the table is the
// launch's parameter (24 KB, under CUDA's 32 KB parameter limit).
constexpr int64_t kChunkElements = int64_t{1} << 16;
constexpr int kChunkThreads = 512;
constexpr int kTableChunks = 600;

struct Chunk {
  const float* in;
  float* out;
  int64_t begin;
  int64_t count;
  int32_t tensor;
};

struct ChunkTable {
  Chunk chunks[kTableChunks];
};

struct MultiTensorState {
  int first_non_finite;
  double sum_of_squares;
  double factor;
};

std::vector<Chunk> Chunks(const std::vector<CudaTensorChunkSource>& tensors) {
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (int64_t begin = 0; begin < tensors[t].count; begin += kChunkElements) {
      chunks.push_back({tensors[t].in, tensors[t].out, begin, std::min(kChunkElements, tensors[t].count - begin),
                        static_cast<int32_t>(t)});
    }
  }
  return chunks;
}

// Calls launch(table, blocks) for each group of up to kTableChunks chunks.
template <typename Launch>
Status ForEachTable(const std::vector<Chunk>& chunks, Launch&& launch) {
  for (size_t first = 0; first < chunks.size(); first += kTableChunks) {
    ChunkTable table{};
    const size_t count = std::min<size_t>(kTableChunks, chunks.size() - first);
    std::copy(chunks.begin() + first, chunks.begin() + first + count, table.chunks);
    launch(table, static_cast<unsigned>(count));
    ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("multi-tensor kernel"));
  }
  return Status::Ok();
}

__global__ void ResetStateKernel(MultiTensorState* state) {
  state->first_non_finite = INT_MAX;
  state->sum_of_squares = 0.0;
  state->factor = 1.0;
}

__global__ void UnscaleKernel(const __grid_constant__ ChunkTable table, const float* scale, MultiTensorState* state) {
  const Chunk& chunk = table.chunks[blockIdx.x];
  const float inverse_scale = InverseLossScale(*scale);
  bool found = false;
  for (int64_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    const float value = chunk.in[chunk.begin + i];
    found |= IsNonFinite(value);  // tested on the scaled value
    if (chunk.out != nullptr) chunk.out[chunk.begin + i] = value * inverse_scale;
  }
  if (__syncthreads_or(found) && threadIdx.x == 0) atomicMin(&state->first_non_finite, chunk.tensor);
}

__global__ void FinishCheckKernel(const MultiTensorState* state, bool* found_inf, int64_t* first_non_finite) {
  const int first = state->first_non_finite;
  *found_inf = first != INT_MAX;
  *first_non_finite = first == INT_MAX ? -1 : first;
}

__global__ void SumOfSquaresKernel(const __grid_constant__ ChunkTable table, MultiTensorState* state) {
  __shared__ double partial[kChunkThreads];
  const Chunk& chunk = table.chunks[blockIdx.x];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    const double value = chunk.in[chunk.begin + i];
    sum += value * value;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&state->sum_of_squares, partial[0]);
}

__global__ void ClipFactorKernel(MultiTensorState* state, int64_t micro_batches, float max_norm) {
  state->factor = MeanClipFactor(state->sum_of_squares, micro_batches, max_norm);
}

__global__ void ScaleKernel(const __grid_constant__ ChunkTable table, const MultiTensorState* state) {
  const Chunk& chunk = table.chunks[blockIdx.x];
  const double factor = state->factor;
  for (int64_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    chunk.out[chunk.begin + i] = static_cast<float>(chunk.in[chunk.begin + i] * factor);
  }
}

template <CudaOptimizer kKind>
__global__ void UpdateKernel(CudaUpdateParams p, const float* weight, const float* gradient, const float* slot0,
                             const float* slot1, float* new_weight, float* new_slot0, float* new_slot1, int64_t count,
                             const bool* skip) {
  const bool skipped = *skip;
  const float learning_rate = *p.learning_rate;
  float alpha = 0.0f;
  float decay_step = 0.0f;
  if constexpr (kKind == CudaOptimizer::kAdam) {
    alpha = AdamStepSize(learning_rate, p.beta1, p.beta2, *p.step);
    decay_step = learning_rate * p.weight_decay;
  }
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) {
    float w = weight[i];
    float a = slot0 != nullptr ? slot0[i] : 0.0f;
    float b = slot1 != nullptr ? slot1[i] : 0.0f;
    if (!skipped) {
      const float g = gradient[i];
      if constexpr (kKind == CudaOptimizer::kSgd) SgdUpdate(w, a, g, learning_rate, p.momentum, p.nesterov);
      else if constexpr (kKind == CudaOptimizer::kAdam) AdamUpdate(w, a, b, g, alpha, p.beta1, p.beta2, p.epsilon, decay_step);
      else RmspropUpdate(w, a, g, learning_rate, p.rho, p.epsilon);
    }
    new_weight[i] = w;
    if (new_slot0 != nullptr) new_slot0[i] = a;
    if (new_slot1 != nullptr) new_slot1[i] = b;
  }
}

Status ResetState(void* scratch, const CudaLaunchEnv& env) {
  ResetStateKernel<<<1, 1, 0, env.stream>>>(static_cast<MultiTensorState*>(scratch));
  return CudaLaunchStatus("multi-tensor state");
}

}  // namespace

size_t CudaMultiTensorScratchBytes() { return sizeof(MultiTensorState); }

Status LaunchCudaUnscaleAndCheck(const std::vector<CudaTensorChunkSource>& tensors, const float* scale,
                                 bool* found_inf, int64_t* first_non_finite, void* scratch, const CudaLaunchEnv& env) {
  auto* state = static_cast<MultiTensorState*>(scratch);
  ONNX_AMP_RETURN_IF_ERROR(ResetState(scratch, env));
  ONNX_AMP_RETURN_IF_ERROR(ForEachTable(Chunks(tensors), [&](const ChunkTable& table, unsigned blocks) {
    UnscaleKernel<<<blocks, kChunkThreads, 0, env.stream>>>(table, scale, state);
  }));
  FinishCheckKernel<<<1, 1, 0, env.stream>>>(state, found_inf, first_non_finite);
  return CudaLaunchStatus("UnscaleAndCheck (finish)");
}

Status LaunchCudaGlobalNormClip(const std::vector<CudaTensorChunkSource>& tensors, int64_t micro_batches,
                                float max_norm, void* scratch, const CudaLaunchEnv& env) {
  const std::vector<Chunk> chunks = Chunks(tensors);
  if (chunks.empty()) return Status::Ok();
  auto* state = static_cast<MultiTensorState*>(scratch);
  ONNX_AMP_RETURN_IF_ERROR(ResetState(scratch, env));
  if (max_norm > 0.0f) {
    ONNX_AMP_RETURN_IF_ERROR(ForEachTable(chunks, [&](const ChunkTable& table, unsigned blocks) {
      SumOfSquaresKernel<<<blocks, kChunkThreads, 0, env.stream>>>(table, state);
    }));
  }
  ClipFactorKernel<<<1, 1, 0, env.stream>>>(state, micro_batches, max_norm);
  ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("GlobalNormClip (factor)"));
  return ForEachTable(chunks, [&](const ChunkTable& table, unsigned blocks) {
    ScaleKernel<<<blocks, kChunkThreads, 0, env.stream>>>(table, state);
  });
}

Status LaunchCudaOptimizerUpdate(const CudaUpdateParams& params, const float* weight, const float* gradient,
                                 const float* slot0, const float* slot1, float* new_weight, float* new_slot0,
                                 float* new_slot1, int64_t count, const bool* skip, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  switch (params.kind) {
    case CudaOptimizer::kSgd:
      UpdateKernel<CudaOptimizer::kSgd><<<launch.blocks, launch.threads, 0, env.stream>>>(
          params, weight, gradient, slot0, slot1, new_weight, new_slot0, new_slot1, count, skip);
      break;
    case CudaOptimizer::kAdam:
      UpdateKernel<CudaOptimizer::kAdam><<<launch.blocks, launch.threads, 0, env.stream>>>(
          params, weight, gradient, slot0, slot1, new_weight, new_slot0, new_slot1, count, skip);
      break;
    case CudaOptimizer::kRmsprop:
      UpdateKernel<CudaOptimizer::kRmsprop><<<launch.blocks, launch.threads, 0, env.stream>>>(
          params, weight, gradient, slot0, slot1, new_weight, new_slot0, new_slot1, count, skip);
      break;
  }
  return CudaLaunchStatus("optimizer update");
}

}  // namespace onnx_amp
