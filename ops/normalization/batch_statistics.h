// Where a training-mode BatchNormalization hands its batch statistics to the
// BatchNormalizationGrad of the same X (the executor's ShareBatchStatistics rewrite,
// runtime/executor/plan_rewrites.h): the forward step writes the batch mean and variance
// (float32 [C], the variance divided by the count) as extra outputs, and the gradient step
// reads them as extra inputs at the same indices, instead of summing X again. Both sides
// compute them with ChannelsLastMeanVar (batch_norm_channels_last.h), so the gradient's
// bits do not change. Past every output and input the ONNX and ai.onnx_amp ops define.
#pragma once

namespace onnx_amp {

inline constexpr int kBatchMeanIndex = 5;
inline constexpr int kBatchVarIndex = 6;

}  // namespace onnx_amp
