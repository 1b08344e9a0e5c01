// metrics_probe IN.npz RTOL ATOL CLASSES: compares the arrays "reference" and
// "candidate" of IN.npz (float32 or float64, same size) with CompareTensors and prints
// the metrics as one JSON object, so that a Python test can check them against NumPy.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/io/npz.h"
#include "runtime/validate/tensor_metrics.h"

namespace {

using onnx_amp::DType;

bool ToDoubles(const onnx_amp::Tensor& tensor, std::vector<double>& out) {
  out.resize(static_cast<size_t>(tensor.num_elements()));
  if (tensor.dtype() == DType::kFloat64) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = tensor.data<double>()[i];
    return true;
  }
  if (tensor.dtype() == DType::kFloat32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = tensor.data<float>()[i];
    return true;
  }
  return false;
}

nlohmann::json Number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: metrics_probe IN.npz RTOL ATOL CLASSES\n");
    return 2;
  }
  auto arrays = onnx_amp::ReadNpzFile(argv[1]);
  if (!arrays.ok()) {
    std::fprintf(stderr, "%s\n", arrays.status().message().c_str());
    return 1;
  }
  std::map<std::string, std::vector<double>> values;
  for (const onnx_amp::NamedTensor& array : *arrays) {
    if (!ToDoubles(array.tensor, values[array.name])) {
      std::fprintf(stderr, "array '%s' is neither float32 nor float64\n", array.name.c_str());
      return 1;
    }
  }
  const std::vector<double>& reference = values["reference"];
  const std::vector<double>& candidate = values["candidate"];
  if (reference.empty() || reference.size() != candidate.size()) {
    std::fprintf(stderr, "need arrays 'reference' and 'candidate' of one size\n");
    return 1;
  }
  const onnx_amp::Tolerance tolerance{std::atof(argv[2]), std::atof(argv[3])};
  const onnx_amp::TensorMetrics m = onnx_amp::CompareTensors(reference, candidate, tolerance, std::atoll(argv[4]));
  nlohmann::json json = {{"count", m.count},
                         {"reference_non_finite", m.reference_non_finite},
                         {"candidate_non_finite", m.candidate_non_finite},
                         {"violations", m.violations},
                         {"worst_index", m.worst_index},
                         {"max_abs_error", Number(m.max_abs_error)},
                         {"max_rel_error", Number(m.max_rel_error)},
                         {"mean_rel_error", Number(m.mean_rel_error)},
                         {"rel_l2_error", Number(m.rel_l2_error)},
                         {"cosine_similarity", Number(m.cosine_similarity)},
                         {"reference_max_abs", Number(m.reference_max_abs)},
                         {"candidate_max_abs", Number(m.candidate_max_abs)},
                         {"float16_headroom", Number(m.float16_headroom)},
                         {"top1_agreement", m.top1_agreement ? Number(*m.top1_agreement) : nlohmann::json(nullptr)},
                         {"top5_agreement", m.top5_agreement ? Number(*m.top5_agreement) : nlohmann::json(nullptr)}};
  std::printf("%s\n", json.dump().c_str());
  return 0;
}
