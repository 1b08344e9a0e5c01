// Tensor: a dtype, a shape and a view into a device buffer. Buffers are reference
// counted so the executor can reuse them (memory planning) and hand views out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx_amp {

enum class DeviceKind { kCpu, kCuda };

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);

// Where a buffer that is not plain host memory goes back when it dies: a device's
// caching pool, pinned host memory. Buffers hold their owner, so it outlives them.
class BufferOwner {
 public:
  virtual ~BufferOwner() = default;
  virtual void Release(void* data, size_t bytes) = 0;
};

// A block of device memory. CPU buffers are 64-byte aligned (AVX-512 loads, oneDNN).
class Buffer {
 public:
  static std::shared_ptr<Buffer> AllocateCpu(size_t bytes);
  // Memory of `device` that `owner` handed out and takes back when the buffer dies.
  static std::shared_ptr<Buffer> Adopt(void* data, size_t bytes, DeviceKind device, std::shared_ptr<BufferOwner> owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  DeviceKind device() const { return device_; }

 private:
  Buffer(void* data, size_t bytes, DeviceKind device, std::shared_ptr<BufferOwner> owner)
      : data_(data), bytes_(bytes), device_(device), owner_(std::move(owner)) {}
  void* data_;
  size_t bytes_;
  DeviceKind device_;
  std::shared_ptr<BufferOwner> owner_;  // nullptr: CPU memory from AllocateCpu
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates a CPU tensor; contents are uninitialised.
  static Tensor Empty(DType dtype, Shape shape);
  static Tensor Zeros(DType dtype, Shape shape);
  // A tensor over an existing buffer (must be large enough).
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset = 0);

  bool defined() const { return buffer_ != nullptr || dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[axis]; }
  int64_t num_elements() const { return NumElements(shape_); }
  size_t bytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype_); }
  DeviceKind device() const { return buffer_ ? buffer_->device() : DeviceKind::kCpu; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  void* raw_data() { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr; }
  const void* raw_data() const { return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_ : nullptr; }
  template <typename T> T* data() { return static_cast<T*>(raw_data()); }
  template <typename T> const T* data() const { return static_cast<const T*>(raw_data()); }

  // Same buffer, new shape with the same element count (Reshape, Flatten, Squeeze...).
  Tensor Reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

}  // namespace onnx_amp
