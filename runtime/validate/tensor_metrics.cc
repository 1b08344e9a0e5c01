#include "runtime/validate/tensor_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx_amp {
namespace {


// Fraction of rows whose reference argmax is among the candidate's top-k entries.
double TopKAgreement(std::span<const double> reference, std::span<const double> candidate, int64_t classes,
                     int64_t k) {
  const int64_t rows = static_cast<int64_t>(reference.size()) / classes;
  if (rows == 0) return 1.0;
  int64_t agree = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const double* r = reference.data() + row * classes;
    const double* c = candidate.data() + row * classes;
    const int64_t target = std::max_element(r, r + classes) - r;
    // The target is in the candidate's top-k when fewer than k classes beat it.
    int64_t better = 0;
    for (int64_t j = 0; j < classes; ++j) {
      if (c[j] > c[target] || (c[j] == c[target] && j < target)) ++better;
    }
    if (better < k) ++agree;
  }
  return static_cast<double>(agree) / static_cast<double>(rows);
}

}  // namespace

TensorMetrics CompareTensors(std::span<const double> reference, std::span<const double> candidate,
                             const Tolerance& tolerance, int64_t classes) {
  ONNX_AMP_ASSERT(reference.size() == candidate.size(), "compared tensors differ in size");
  TensorMetrics m;
  m.count = static_cast<int64_t>(reference.size());

  for (size_t i = 0; i < reference.size(); ++i) {
    if (std::isfinite(reference[i])) m.reference_max_abs = std::max(m.reference_max_abs, std::fabs(reference[i]));
    if (std::isfinite(candidate[i])) m.candidate_max_abs = std::max(m.candidate_max_abs, std::fabs(candidate[i]));
  }
  const double floor = std::max(1e-6 * m.reference_max_abs, std::numeric_limits<double>::min());

  double sum_rel = 0.0, diff_sq = 0.0, ref_sq = 0.0, cand_sq = 0.0, dot = 0.0, worst_ratio = -1.0;
  int64_t finite_pairs = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double r = reference[i];
    const double c = candidate[i];
    const bool r_finite = std::isfinite(r);
    const bool c_finite = std::isfinite(c);
    m.reference_non_finite += !r_finite;
    m.candidate_non_finite += !c_finite;
    if (!r_finite || !c_finite) {
      // Same non-finite value on both sides (inf == inf, NaN and NaN) is agreement.
      const bool same = !r_finite && !c_finite && ((std::isnan(r) && std::isnan(c)) || r == c);
      if (!same) {
        ++m.violations;
        if (worst_ratio < std::numeric_limits<double>::infinity()) {
          worst_ratio = std::numeric_limits<double>::infinity();
          m.worst_index = static_cast<int64_t>(i);
        }
      }
      continue;
    }
    ++finite_pairs;
    const double abs_error = std::fabs(c - r);
    const double rel_error = abs_error / std::max(std::fabs(r), floor);
    m.max_abs_error = std::max(m.max_abs_error, abs_error);
    m.max_rel_error = std::max(m.max_rel_error, rel_error);
    sum_rel += rel_error;
    diff_sq += abs_error * abs_error;
    ref_sq += r * r;
    cand_sq += c * c;
    dot += r * c;
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(r);
    if (abs_error > allowed) ++m.violations;
    const double ratio = allowed > 0.0 ? abs_error / allowed
                                       : (abs_error > 0.0 ? std::numeric_limits<double>::max() : 0.0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      m.worst_index = static_cast<int64_t>(i);
    }
  }
  if (finite_pairs > 0) m.mean_rel_error = sum_rel / static_cast<double>(finite_pairs);
  if (ref_sq > 0.0) {
    m.rel_l2_error = std::sqrt(diff_sq / ref_sq);
  } else {
    m.rel_l2_error = diff_sq > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  if (ref_sq > 0.0 && cand_sq > 0.0) {
    m.cosine_similarity = dot / (std::sqrt(ref_sq) * std::sqrt(cand_sq));
  } else {
    m.cosine_similarity = (ref_sq == 0.0 && cand_sq == 0.0) ? 1.0 : 0.0;
  }
  m.float16_headroom = m.reference_max_abs > 0.0 ? kFloat16Max / m.reference_max_abs
                                                 : std::numeric_limits<double>::infinity();
  if (classes > 1 && m.count % classes == 0) {
    m.top1_agreement = TopKAgreement(reference, candidate, classes, 1);
    if (classes >= 5) m.top5_agreement = TopKAgreement(reference, candidate, classes, 5);
  }
  return m;
}

}  // namespace onnx_amp
