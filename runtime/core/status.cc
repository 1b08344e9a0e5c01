#include "runtime/core/status.h"

namespace onnx_amp {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kNumeric: return "numeric check failed";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace onnx_amp
