#include "runtime/validate/report_format.h"

#include <cmath>
#include <cstdio>

#include "runtime/io/file_bytes.h"

namespace onnx_amp {

nlohmann::json JsonNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

namespace {

nlohmann::json OptionalNumber(const std::optional<double>& value) {
  return value ? JsonNumber(*value) : nlohmann::json(nullptr);
}

nlohmann::json TensorToJson(const TensorComparison& t) {
  const TensorMetrics& m = t.metrics;
  return {
      {"name", t.name},
      {"producer", t.producer},
      {"op_type", t.op_type},
      {"reference_dtype", std::string(DTypeName(t.reference_dtype))},
      {"mixed_dtype", std::string(DTypeName(t.mixed_dtype))},
      {"passed", t.passed},
      {"rtol", JsonNumber(t.tolerance.rtol)},
      {"atol", JsonNumber(t.tolerance.atol)},
      {"worst_sample", t.worst_sample},
      {"count", m.count},
      {"violations", m.violations},
      {"worst_index", m.worst_index},
      {"max_abs_error", JsonNumber(m.max_abs_error)},
      {"max_rel_error", JsonNumber(m.max_rel_error)},
      {"mean_rel_error", JsonNumber(m.mean_rel_error)},
      {"rel_l2_error", JsonNumber(m.rel_l2_error)},
      {"cosine_similarity", JsonNumber(m.cosine_similarity)},
      {"reference_non_finite", m.reference_non_finite},
      {"mixed_non_finite", m.candidate_non_finite},
      {"reference_max_abs", JsonNumber(m.reference_max_abs)},
      {"mixed_max_abs", JsonNumber(m.candidate_max_abs)},
      {"float16_headroom", JsonNumber(m.float16_headroom)},
      {"reference_range", {JsonNumber(t.reference_min), JsonNumber(t.reference_max)}},
      {"mixed_range", {JsonNumber(t.mixed_min), JsonNumber(t.mixed_max)}},
      {"top1_agreement", OptionalNumber(m.top1_agreement)},
      {"top5_agreement", OptionalNumber(m.top5_agreement)},
  };
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string TensorLine(const TensorComparison& t) {
  const TensorMetrics& m = t.metrics;
  std::string line = (t.passed ? "  ok    " : "  FAIL  ") + t.name + " (" + std::string(DTypeName(t.mixed_dtype)) +
                     ")  max_abs " + Format("%.3g", m.max_abs_error) + "  max_rel " + Format("%.3g", m.max_rel_error) +
                     "  rel_l2 " + Format("%.3g", m.rel_l2_error) + "  cos " + Format("%.6f", m.cosine_similarity);
  if (m.top1_agreement) line += "  top1 " + Format("%.3f", *m.top1_agreement);
  if (m.top5_agreement) line += "  top5 " + Format("%.3f", *m.top5_agreement);
  if (m.candidate_non_finite > 0) line += "  non-finite " + std::to_string(m.candidate_non_finite);
  line += "  headroom " + Format("%.3g", m.float16_headroom) + "x";
  line += "  [rtol " + Format("%.2g", t.tolerance.rtol) + ", atol " + Format("%.2g", t.tolerance.atol) + "]";
  if (!t.passed) line += "  " + std::to_string(m.violations) + " of " + std::to_string(m.count) + " elements off";
  return line + "\n";
}

}  // namespace

nlohmann::json ValidationReportToJson(const ValidationReport& report) {
  nlohmann::json json = {{"schema", kValidationSchema}, {"passed", report.passed}, {"samples", report.samples}};
  json["outputs"] = nlohmann::json::array();
  for (const TensorComparison& t : report.outputs) json["outputs"].push_back(TensorToJson(t));
  json["intermediates"] = nlohmann::json::array();
  if (report.per_node) {
    for (const TensorComparison& t : report.intermediates) json["intermediates"].push_back(TensorToJson(t));
  }
  json["first_divergence"] = nullptr;
  if (report.first_divergence) {
    const FirstDivergence& d = *report.first_divergence;
    nlohmann::json inputs = nlohmann::json::array();
    for (const std::string& name : d.inputs) {
      const TensorComparison* t = report.Find(name);
      nlohmann::json input = {{"name", name}};
      input["max_abs_error"] = t ? JsonNumber(t->metrics.max_abs_error) : nlohmann::json(nullptr);
      input["rel_l2_error"] = t ? JsonNumber(t->metrics.rel_l2_error) : nlohmann::json(nullptr);
      input["reference_range"] =
          t ? nlohmann::json{JsonNumber(t->reference_min), JsonNumber(t->reference_max)} : nlohmann::json(nullptr);
      input["mixed_range"] = t ? nlohmann::json{JsonNumber(t->mixed_min), JsonNumber(t->mixed_max)} : nlohmann::json(nullptr);
      inputs.push_back(input);
    }
    json["first_divergence"] = {{"node", d.node},     {"op_type", d.op_type},
                                {"dtype", std::string(DTypeName(d.dtype))},
                                {"value", d.value},   {"non_finite", d.non_finite},
                                {"sample", d.sample}, {"inputs", inputs}};
  }
  return json;
}

std::string FormatValidationReport(const ValidationReport& report) {
  std::string text = "validation over " + std::to_string(report.samples) + " sample(s): " +
                     (report.passed ? "PASSED" : "FAILED") + "\noutputs:\n";
  for (const TensorComparison& t : report.outputs) text += TensorLine(t);
  if (report.per_node && !report.intermediates.empty()) {
    text += "intermediate values (topological order):\n";
    for (const TensorComparison& t : report.intermediates) text += TensorLine(t);
  }
  if (report.first_divergence) {
    const FirstDivergence& d = *report.first_divergence;
    text += "first divergence: node '" + d.node + "' (" + d.op_type + ", " + std::string(DTypeName(d.dtype)) +
            ") output '" + d.value + "' " + (d.non_finite ? "turned non-finite" : "left its tolerance") +
            " on sample " + std::to_string(d.sample) + "\n";
    for (const std::string& name : d.inputs) {
      const TensorComparison* t = report.Find(name);
      if (!t) {
        text += "  input '" + name + "': not compared (integer, or a value only one model has)\n";
        continue;
      }
      text += "  input '" + name + "': max_abs error " + Format("%.3g", t->metrics.max_abs_error) +
              ", float32 range [" + Format("%.4g", t->reference_min) + ", " + Format("%.4g", t->reference_max) +
              "], mixed range [" + Format("%.4g", t->mixed_min) + ", " + Format("%.4g", t->mixed_max) + "]\n";
    }
  } else {
    text += "no value left its tolerance\n";
  }
  return text;
}

std::string SummarizeFailure(const ValidationReport& report) {
  std::string summary = "validation failed";
  for (const TensorComparison& t : report.outputs) {
    if (t.passed) continue;
    summary += ": output '" + t.name + "' has " + std::to_string(t.metrics.violations) + " of " +
               std::to_string(t.metrics.count) + " elements beyond tolerance on sample " +
               std::to_string(t.worst_sample) +
               (t.metrics.candidate_non_finite > t.metrics.reference_non_finite
                    ? " (" + std::to_string(t.metrics.candidate_non_finite) + " non-finite)"
                    : " (max abs error " + Format("%.3g", t.metrics.max_abs_error) + ")");
    break;
  }
  if (report.first_divergence) {
    const FirstDivergence& d = *report.first_divergence;
    summary += "; first divergence at node '" + d.node + "' (" + d.op_type + ", " + std::string(DTypeName(d.dtype)) +
               "), value '" + d.value + "' " + (d.non_finite ? "turned non-finite" : "left its tolerance");
  }
  return summary;
}

Status WriteValidationReport(const ValidationReport& report, const std::string& path) {
  return WriteWholeFile(path, ValidationReportToJson(report).dump(2) + "\n");
}

}  // namespace onnx_amp
