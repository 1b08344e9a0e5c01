// Statistics of one executor run: time per op type and tensor memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace onnx_amp {

struct OpTime {
  int64_t calls = 0;
  double seconds = 0;  // excludes the time of subgraphs the op ran (If/Loop/Scan bodies)
};

struct RunStats {
  std::map<std::string, OpTime> op_times;  // by op type
  double total_seconds = 0;
  // Intermediate tensors (node outputs): the most bytes live at once, the sum of the sizes
  // of every one the run produced, and the bytes fresh allocations took.
  size_t peak_live_bytes = 0;
  size_t sum_tensor_bytes = 0;
  size_t allocated_bytes = 0;
  int64_t buffer_reuses = 0;   // allocations served from a dead tensor's buffer
  int64_t inplace_reuses = 0;  // outputs written over a dying input
  int64_t device_steps = 0;    // steps that ran on the device (the rest ran on the CPU)
};

// A table, slowest op type first, then the memory lines.
std::string FormatRunStats(const RunStats& stats);

// The memory lines alone: peak live tensor bytes, allocations and reuses, device steps.
std::string FormatMemoryStats(const RunStats& stats);

// Time per op type summed over many runs (a training run's steps, each one run of the
// step graph and one of the update graph, or `onnx-amp run --repeat`'s runs).
struct OpTimeTotals {
  std::map<std::string, OpTime> op_times;
  double run_seconds = 0;    // the runs' wall time, kernels and what lies between them
  int64_t device_steps = 0;  // steps that ran on a device: their times are launch times
  void Add(const RunStats& run);
};

// A table of the totals divided by `count`: calls and milliseconds per `unit` ("step" for
// a training run's steps, "run" for repeated inference runs) of each op type, slowest
// first, with its share of the kernels' time, then the runs' time per unit.
std::string FormatOpTimesPer(const OpTimeTotals& totals, int64_t count, const std::string& unit);

}  // namespace onnx_amp
