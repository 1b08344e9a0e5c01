// Status and Expected<T>: the one channel for recoverable errors (bad models, bad
// files, bad flags). Invariants use ONNX_AMP_ASSERT instead; nothing throws across
// a library boundary.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace onnx_amp {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // a flag or argument value is wrong (CLI exit code 2)
  kNotFound,         // a file, input name or tensor does not exist
  kInvalidModel,     // the model is malformed or violates the ONNX spec
  kUnsupported,      // valid, but beyond what this build can do (opset, op, dtype)
  kIoError,          // reading or writing a file failed
  kNumeric,          // a numeric check failed (validation, training)
  kInternal,         // a bug: an invariant that input could not have broken
};

const char* ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where the error happened, e.g. "model.onnx: node 'conv1': ".
  Status WithContext(const std::string& where) const {
    if (ok()) return *this;
    return Status(code_, where + ": " + message_);
  }

  // Marks a status as deliberately ignored.
  void IgnoreError() const {}

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) { return {ErrorCode::kInvalidArgument, std::move(message)}; }
inline Status NotFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
inline Status InvalidModel(std::string message) { return {ErrorCode::kInvalidModel, std::move(message)}; }
inline Status Unsupported(std::string message) { return {ErrorCode::kUnsupported, std::move(message)}; }
inline Status IoError(std::string message) { return {ErrorCode::kIoError, std::move(message)}; }
inline Status NumericError(std::string message) { return {ErrorCode::kNumeric, std::move(message)}; }
inline Status InternalError(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

// Either a value or an error Status (never an ok Status).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Status status) : storage_(std::move(status)) {
    if (std::get<Status>(storage_).ok()) {
      storage_ = Status(ErrorCode::kInternal, "Expected constructed from an ok Status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(storage_);
  }
  T& value() & { return std::get<T>(storage_); }
  const T& value() const& { return std::get<T>(storage_); }
  T&& value() && { return std::get<T>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> storage_;
};

[[noreturn]] inline void AssertFail(const char* condition, const char* message, const char* file, int line) {
  std::fprintf(stderr, "onnx-amp internal error at %s:%d: %s (%s)\n", file, line, message, condition);
  std::abort();
}

}  // namespace onnx_amp

#define ONNX_AMP_CONCAT_INNER(a, b) a##b
#define ONNX_AMP_CONCAT(a, b) ONNX_AMP_CONCAT_INNER(a, b)

#define ONNX_AMP_RETURN_IF_ERROR(expr)              \
  do {                                              \
    ::onnx_amp::Status onnx_amp_status_ = (expr);   \
    if (!onnx_amp_status_.ok()) return onnx_amp_status_; \
  } while (0)

#define ONNX_AMP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

// ONNX_AMP_ASSIGN_OR_RETURN(auto model, LoadModel(path));
#define ONNX_AMP_ASSIGN_OR_RETURN(lhs, expr) \
  ONNX_AMP_ASSIGN_OR_RETURN_IMPL(ONNX_AMP_CONCAT(onnx_amp_expected_, __LINE__), lhs, expr)

#define ONNX_AMP_ASSERT(cond, message) \
  ((cond) ? (void)0 : ::onnx_amp::AssertFail(#cond, message, __FILE__, __LINE__))
