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

// Rows slowest first; ties keep the op types' alphabetical order.
std::vector<std::pair<std::string, OpTime>> SlowestFirst(const std::map<std::string, OpTime>& op_times) {
  std::vector<std::pair<std::string, OpTime>> rows(op_times.begin(), op_times.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  return rows;
}

// The op types' rows, slowest first: calls and milliseconds divided by `divisor` (1 for
// one run, the step count for a training run's totals) and each type's share of the
// kernels' time, under a header naming the two columns. Adds the kernels' seconds (not
// divided) to `kernel_seconds`.
std::string OpRows(const std::map<std::string, OpTime>& op_times, int64_t divisor, const char* calls_column,
                   const char* time_column, double& kernel_seconds) {
  const std::vector<std::pair<std::string, OpTime>> rows = SlowestFirst(op_times);
  double op_total = 0;
  for (const auto& row : rows) op_total += row.second.seconds;
  kernel_seconds += op_total;
  const double scale = divisor > 0 ? 1.0 / static_cast<double>(divisor) : 0.0;
  // The op-type column is as wide as its longest label (a fused step's can be long).
  int width = 32;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  char line[256];
  std::snprintf(line, sizeof line, "%-*s %10s %10s %7s\n", width, "op type", calls_column, time_column, "share");
  std::string out = line;
  for (const auto& [op, time] : rows) {
    char calls[32];  // whole counts for one run, a mean for many
    if (divisor == 1) std::snprintf(calls, sizeof calls, "%lld", static_cast<long long>(time.calls));
    else std::snprintf(calls, sizeof calls, "%.4g", static_cast<double>(time.calls) * scale);
    std::snprintf(line, sizeof line, "%-*s %10s %10.3f %6.1f%%\n", width, op.c_str(), calls, time.seconds * 1e3 * scale,
                  op_total > 0 ? 100.0 * time.seconds / op_total : 0.0);
    out += line;
  }
  return out;
}

}  // namespace

std::string FormatRunStats(const RunStats& stats) {
  double op_total = 0;
  std::string out = OpRows(stats.op_times, 1, "calls", "time (ms)", op_total);
  char line[256];
  std::snprintf(line, sizeof line, "total run time: %.3f ms (kernels %.3f ms)\n", stats.total_seconds * 1e3, op_total * 1e3);
  out += line;
  return out + FormatMemoryStats(stats);
}

std::string FormatMemoryStats(const RunStats& stats) {
  char line[256];
  std::string out = "peak tensor memory: " + FormatBytes(stats.peak_live_bytes) + " live at once, vs " +
         FormatBytes(stats.sum_tensor_bytes) + " for all intermediate tensors\n";
  std::snprintf(line, sizeof line, "allocated: %s; buffer reuses: %lld; in-place outputs: %lld\n",
                FormatBytes(stats.allocated_bytes).c_str(), static_cast<long long>(stats.buffer_reuses),
                static_cast<long long>(stats.inplace_reuses));
  out += line;
  if (stats.device_steps > 0) {
    // Device kernels are queued, not waited for: their times are launch times.
    int64_t steps = 0;
    for (const auto& row : stats.op_times) steps += row.second.calls;
    std::snprintf(line, sizeof line, "on the device: %lld of %lld steps (their times above are launch times)\n",
                  static_cast<long long>(stats.device_steps), static_cast<long long>(steps));
    out += line;
  }
  return out;
}

void OpTimeTotals::Add(const RunStats& run) {
  for (const auto& [op, time] : run.op_times) {
    OpTime& total = op_times[op];
    total.calls += time.calls;
    total.seconds += time.seconds;
  }
  run_seconds += run.total_seconds;
  device_steps += run.device_steps;
}

std::string FormatOpTimesPer(const OpTimeTotals& totals, int64_t count, const std::string& unit) {
  const double per_unit = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
  double op_total = 0;
  const std::string calls_column = "calls/" + unit;
  const std::string time_column = "ms/" + unit;
  std::string out = OpRows(totals.op_times, count, calls_column.c_str(), time_column.c_str(), op_total);
  char line[256];
  std::snprintf(line, sizeof line, "per %s over %lld %ss: %.3f ms in runs, %.3f ms in kernels\n", unit.c_str(),
                static_cast<long long>(count), unit.c_str(), totals.run_seconds * 1e3 * per_unit,
                op_total * 1e3 * per_unit);
  out += line;
  if (totals.device_steps > 0) out += "steps on the device count their launch times, not their run times\n";
  return out;
}

}  // namespace onnx_amp
