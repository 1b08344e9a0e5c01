// The statistics LayerNormalization, InstanceNormalization and GroupNormalization
// normalise a block of float32 values with, and the normalisation itself, in 16 lanes
// (ops/common/float_lanes.h) cloned per instruction set: the mean, then the mean square
// deviation (two passes), each summed in lanes folded in halves, so every CPU gives the
// same bits. float16 and bfloat16 blocks are widened before; float64 ones take
// row_statistics.h.
#pragma once

#include <cstdint>

namespace onnx_amp {

struct LaneStatistics {
  float mean;
  float inv_std;  // 1 / sqrt(variance + epsilon)
};

LaneStatistics LaneMeanAndInvStd(const float* values, int64_t count, float epsilon);

// y[i] = (x[i] - mean) * inv_std * scale[i] + bias[i] for i < count; bias may be null (0).
// y may be x.
void LaneNormalize(const float* x, int64_t count, LaneStatistics statistics, const float* scale, const float* bias,
                   float* y);

// The same with one scale and one bias for all count values (a channel of GroupNorm).
void LaneNormalizeUniform(const float* x, int64_t count, LaneStatistics statistics, float scale, float bias, float* y);

}  // namespace onnx_amp
