// How onnx-amp reports a failed command: one line on stderr and an exit code.
#pragma once

#include "runtime/core/status.h"

namespace onnx_amp {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;  // the command failed (bad model, file, numerics)
inline constexpr int kExitUsage = 2;    // the command line was wrong

int ExitCodeFor(ErrorCode code);

// Prints "onnx-amp: error: <message>" to stderr for a failed status; returns the exit code.
int ReportStatus(const Status& status);

}  // namespace onnx_amp
