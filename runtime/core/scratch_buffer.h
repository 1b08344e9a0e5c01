// A work area that grows to the largest request made of it and keeps its memory between
// requests, for per-thread scratch (oneDNN's scratchpads, relayout arenas). Its memory
// comes from Buffer::AllocateCpu, so a large one is 2 MiB aligned on huge pages where
// the system gives them.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/core/tensor.h"

namespace onnx_amp {

class ScratchBuffer {
 public:
  // At least `bytes` of memory; what an earlier request wrote is lost when it grows.
  char* Reserve(size_t bytes) {
    if (!buffer_ || buffer_->bytes() < bytes) {
      buffer_.reset();  // release first: the old and the new one are never both held
      buffer_ = Buffer::AllocateCpu(bytes);
    }
    return static_cast<char*>(buffer_->data());
  }

 private:
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace onnx_amp
