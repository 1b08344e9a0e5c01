#include "tools/onnx-amp/cli_errors.h"

#include <cstdio>

namespace onnx_amp {

int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return kExitSuccess;
    case ErrorCode::kInvalidArgument: return kExitUsage;
    case ErrorCode::kNotFound: return kExitFailure;
    case ErrorCode::kInvalidModel: return kExitFailure;
    case ErrorCode::kUnsupported: return kExitFailure;
    case ErrorCode::kIoError: return kExitFailure;
    case ErrorCode::kNumeric: return kExitFailure;
    case ErrorCode::kInternal: return kExitFailure;
  }
  return kExitFailure;
}

int ReportStatus(const Status& status) {
  if (!status.ok()) std::fprintf(stderr, "onnx-amp: error: %s\n", status.message().c_str());
  return ExitCodeFor(status.code());
}

}  // namespace onnx_amp
