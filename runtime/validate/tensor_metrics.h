// Error metrics between a float32 reference tensor and a mixed-precision candidate,
// computed in double in one pass. Definitions (the report schema documents them too):
//   abs_i  = |c_i - r_i|
//   rel_i  = abs_i / max(|r_i|, floor), floor = 1e-6 * max|r| (so exact zeros in the
//            reference do not make the relative error meaningless)
//   max_abs_error, max_rel_error, mean_rel_error over elements where both are finite
//   rel_l2_error      = ||c - r||_2 / ||r||_2          (0 when both are all zero)
//   cosine_similarity = <c, r> / (||c||_2 ||r||_2)     (1 when both are all zero)
//   violations        = #{i : abs_i > atol + rtol * |r_i|}, plus every position where
//                       exactly one side is non-finite or both are but differ
//   float16_headroom  = 65504 / max|r| over finite r   (inf when max|r| == 0)
//   top-k agreement (classifier outputs, classes on the last axis): the fraction of rows
//   whose reference top-1 class is among the candidate's top-k classes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace onnx_amp {

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

struct TensorMetrics {
  int64_t count = 0;
  int64_t reference_non_finite = 0;
  int64_t candidate_non_finite = 0;
  int64_t violations = 0;
  int64_t worst_index = -1;  // element with the largest abs_i / (atol + rtol*|r_i|)
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  double mean_rel_error = 0.0;
  double rel_l2_error = 0.0;
  double cosine_similarity = 1.0;
  double reference_max_abs = 0.0;
  double candidate_max_abs = 0.0;
  double float16_headroom = 0.0;
  std::optional<double> top1_agreement;
  std::optional<double> top5_agreement;

  bool within_tolerance() const { return violations == 0; }
};

// `classes` > 1 treats the tensor as rows of `classes` scores for the top-k metrics;
// 0 skips them. reference and candidate must have the same length.
TensorMetrics CompareTensors(std::span<const double> reference, std::span<const double> candidate,
                             const Tolerance& tolerance, int64_t classes);

}  // namespace onnx_amp
