#include "runtime/executor/run_stats.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace onnx_amp {
namespace {

std::string FormatBytes(size_t bytes) {
  char text[64];
  if (bytes >= (size_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= (size_t{1} << 10)) {
    std::snprintf(text, sizeof text, "%.2f KiB", static_cast<double>(bytes) / (1 << 10));
  } else {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  }
  return text;
}

}  // namespace

std::string FormatRunStats(const RunStats& stats) {
  std::vector<std::pair<std::string, OpTime>> rows(stats.op_times.begin(), stats.op_times.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double op_total = 0;
  for (const auto& row : rows) op_total += row.second.seconds;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %8s %12s %7s\n", "op type", "calls", "time (ms)", "share");
  out += line;
  for (const auto& [op, time] : rows) {
    std::snprintf(line, sizeof line, "%-24s %8lld %12.3f %6.1f%%\n", op.c_str(), static_cast<long long>(time.calls),
                  time.seconds * 1e3, op_total > 0 ? 100.0 * time.seconds / op_total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "total run time: %.3f ms (kernels %.3f ms)\n", stats.total_seconds * 1e3, op_total * 1e3);
  out += line;
  out += "peak tensor memory: " + FormatBytes(stats.peak_live_bytes) + " live at once, vs " +
         FormatBytes(stats.sum_tensor_bytes) + " for all intermediate tensors\n";
  std::snprintf(line, sizeof line, "allocated: %s; buffer reuses: %lld; in-place outputs: %lld\n",
                FormatBytes(stats.allocated_bytes).c_str(), static_cast<long long>(stats.buffer_reuses),
                static_cast<long long>(stats.inplace_reuses));
  out += line;
  return out;
}

}  // namespace onnx_amp
