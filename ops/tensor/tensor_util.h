// Shared helpers of the shape / data-movement kernels: dispatch on element size (these
// ops move bytes, so one instantiation per width serves every dtype of that width),
// reading shape-like inputs, axis normalisation and row-major strides.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// Unsigned storage of each element width; moves through these are bit-exact.
template <typename T>
struct WidthTag {
  using type = T;
};

// Calls body(WidthTag<U>{}) with U the unsigned integer as wide as one element of
// `dtype` (bool is 1 byte, float16/bfloat16 are 2). Strings and 16-byte complex
// numbers are Unsupported.
template <typename Body>
Status DispatchElementWidth(const KernelContext& context, DType dtype, Body&& body) {
  switch (DTypeSize(dtype)) {
    case 1: return body(WidthTag<uint8_t>{});
    case 2: return body(WidthTag<uint16_t>{});
    case 4: return body(WidthTag<uint32_t>{});
    case 8: return body(WidthTag<uint64_t>{});
    default: break;
  }
  return context.UnsupportedDType(dtype);
}

// Whether the kernels here can move elements of `dtype`.
bool IsMovableDType(DType dtype);

// Row-major strides in elements.
std::vector<int64_t> ContiguousStrides(const Shape& shape);

// Reads a 1-D (or scalar) int64/int32 tensor; errors name the node and `what`.
Expected<std::vector<int64_t>> ReadInt64List(const KernelContext& context, const Tensor& tensor,
                                             std::string_view what);
// Reads a 1-D (or scalar) float tensor of any floating dtype as doubles.
Expected<std::vector<double>> ReadFloatList(const KernelContext& context, const Tensor& tensor,
                                            std::string_view what);
// Every element of a numeric or bool tensor as a double.
Expected<std::vector<double>> ReadAllAsDoubles(const KernelContext& context, const Tensor& tensor);
// Reads one element of any numeric or bool tensor as a double.
Expected<double> ReadScalarAsDouble(const KernelContext& context, const Tensor& tensor, std::string_view what);

// Maps axis from [-rank, rank) to [0, rank); InvalidModel otherwise.
Expected<int64_t> NormalizeAxis(const KernelContext& context, int64_t axis, int64_t rank);
// Normalises every axis and rejects repeats.
Expected<std::vector<int64_t>> NormalizeAxes(const KernelContext& context, const std::vector<int64_t>& axes,
                                             int64_t rank);

// The required input `index`; InvalidModel naming the node when it is absent.
Expected<const Tensor*> RequiredInput(const KernelContext& context, int index);

// Writes `value` (a double) into element `index` of a numeric or bool tensor, rounded
// once to its dtype.
Status StoreDouble(const KernelContext& context, Tensor& tensor, int64_t index, double value);

}  // namespace onnx_amp
