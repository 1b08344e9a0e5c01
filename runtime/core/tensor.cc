#include "runtime/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <sys/mman.h>

#include "runtime/core/env_switch.h"
#include "runtime/core/status.h"

namespace onnx_amp {

int64_t NumElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

std::string ShapeToString(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

// ONNX_AMP_HUGE_PAGES=0 turns the huge-page request below off, for a system where
// compacting memory for huge pages stalls more than the TLB misses cost.
bool HugePagesWanted() {
  static const bool wanted = EnvSwitchOn("ONNX_AMP_HUGE_PAGES");
  return wanted;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::AllocateCpu(size_t bytes) {
  // A buffer of several megabytes (a weight, an activation, an arena) starts on a 2 MiB
  // boundary and asks for transparent huge pages: a GEMM walking a 4096 x 4096 float32
  // weight row by row touches a new 4 KiB page every row, and the TLB misses cost a 4096-
  // unit MLP's training step 4-5%. Where Linux's setting is `madvise` (the usual default)
  // a process gets huge pages only where it asks; where they are off it changes nothing.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t alignment = bytes >= 2 * kHugePage && HugePagesWanted() ? kHugePage : 64;
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (data == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (alignment == kHugePage) madvise(data, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, DeviceKind::kCpu, nullptr));
}

std::shared_ptr<Buffer> Buffer::Adopt(void* data, size_t bytes, DeviceKind device, std::shared_ptr<BufferOwner> owner) {
  ONNX_AMP_ASSERT(owner != nullptr, "an adopted buffer needs its owner");
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, device, std::move(owner)));
}

Buffer::~Buffer() {
  if (owner_) {
    owner_->Release(data_, bytes_);
    return;
  }
  ONNX_AMP_ASSERT(device_ == DeviceKind::kCpu, "device buffers are released to their owner");
  std::free(data_);
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(byte_offset) {
  ONNX_AMP_ASSERT(!buffer_ || offset_ + bytes() <= buffer_->bytes(), "tensor exceeds its buffer");
}

Tensor Tensor::Empty(DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  return Tensor(dtype, std::move(shape), Buffer::AllocateCpu(bytes));
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  Tensor tensor = Empty(dtype, std::move(shape));
  if (tensor.bytes() > 0) std::memset(tensor.raw_data(), 0, tensor.bytes());
  return tensor;
}

Tensor Tensor::Reshaped(Shape shape) const {
  ONNX_AMP_ASSERT(NumElements(shape) == num_elements(), "reshape changes the element count");
  return Tensor(dtype_, std::move(shape), buffer_, offset_);
}

}  // namespace onnx_amp
