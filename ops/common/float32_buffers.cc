#include "ops/common/float32_buffers.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/convert.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {

void LoadFloat32Block(const Tensor& tensor, int64_t begin, int64_t n, float* values) {
  const size_t count = static_cast<size_t>(n);
  if (count == 0) return;
  if (tensor.dtype() == DType::kFloat32) {
    std::memcpy(values, tensor.data<float>() + begin, count * sizeof(float));
  } else if (tensor.dtype() == DType::kFloat16) {
    ConvertHalfToFloat(tensor.data<uint16_t>() + begin, values, count);
  } else {
    ONNX_AMP_ASSERT(tensor.dtype() == DType::kBFloat16, "float32 loads take float32, float16 or bfloat16");
    ConvertBFloat16ToFloat(tensor.data<uint16_t>() + begin, values, count);
  }
}

const float* Float32BlockOf(const Tensor& tensor, int64_t begin, int64_t n, float* scratch) {
  if (tensor.dtype() == DType::kFloat32) return tensor.data<float>() + begin;
  LoadFloat32Block(tensor, begin, n, scratch);
  return scratch;
}

void StoreFloat32Block(const float* values, int64_t begin, int64_t n, Tensor& out) {
  const size_t count = static_cast<size_t>(n);
  if (count == 0) return;
  if (out.dtype() == DType::kFloat32) {
    // In place when values already are out's own elements.
    if (out.data<float>() + begin != values) std::memcpy(out.data<float>() + begin, values, count * sizeof(float));
  } else if (out.dtype() == DType::kFloat16) {
    ConvertFloatToHalf(values, out.data<uint16_t>() + begin, count);
  } else {
    ONNX_AMP_ASSERT(out.dtype() == DType::kBFloat16, "float32 stores take float32, float16 or bfloat16");
    ConvertFloatToBFloat16(values, out.data<uint16_t>() + begin, count);
  }
}

Expected<std::vector<Tensor>> Float32Copies(KernelContext& context, const std::vector<const Tensor*>& tensors) {
  std::vector<Tensor> copies;
  std::vector<int64_t> starts{0};  // tensor i covers [starts[i], starts[i + 1]) of the pass
  for (const Tensor* tensor : tensors) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor copy, context.ScratchFloat32(tensor->num_elements()));
    copies.push_back(std::move(copy));
    starts.push_back(starts.back() + tensor->num_elements());
  }
  constexpr int64_t kChunk = int64_t{1} << 16;
  context.threads().ParallelFor(starts.back(), kChunk, [&](int64_t begin, int64_t end) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const int64_t from = std::max(begin, starts[i]) - starts[i], to = std::min(end, starts[i + 1]) - starts[i];
      if (from < to) LoadFloat32Block(*tensors[i], from, to - from, copies[i].data<float>() + from);
    }
  });
  return copies;
}

void RoundThrough(DType dtype, const float* in, float* out, int64_t count) {
  if (!IsLowPrecision(dtype)) {
    if (in != out) std::memcpy(out, in, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  constexpr int64_t kBlock = 1024;
  uint16_t low[kBlock];
  for (int64_t i = 0; i < count; i += kBlock) {
    const size_t n = static_cast<size_t>(std::min(kBlock, count - i));
    if (dtype == DType::kFloat16) {
      ConvertFloatToHalf(in + i, low, n);
      ConvertHalfToFloat(low, out + i, n);
    } else {
      ConvertFloatToBFloat16(in + i, low, n);
      ConvertBFloat16ToFloat(low, out + i, n);
    }
  }
}

std::vector<float> ToFloat32(const Tensor& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.num_elements()));
  LoadFloat32Block(tensor, 0, tensor.num_elements(), values.data());
  return values;
}

void StoreFromFloat32(const float* values, Tensor& out) { StoreFromFloat32Range(values, out, 0, out.num_elements()); }

void StoreFromFloat32Range(const float* values, Tensor& out, int64_t begin, int64_t end) {
  if (end > begin) StoreFloat32Block(values + begin, begin, end - begin, out);
}

Expected<const Tensor*> FloatInput(const KernelContext& context, int index) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " is missing");
  }
  if (tensor->dtype() == DType::kFloat32 || IsLowPrecision(tensor->dtype())) return tensor;
  return context.UnsupportedDType(tensor->dtype());
}

Status WriteOutput(KernelContext& context, int index, DType dtype, const Shape& shape,
                   const std::vector<float>& values) {
  if (index >= context.num_outputs() || !context.output_used(index)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, dtype, shape));
  ONNX_AMP_ASSERT(static_cast<int64_t>(values.size()) == out->num_elements(), "gradient size mismatch");
  StoreFromFloat32(values.data(), *out);
  return Status::Ok();
}

}  // namespace onnx_amp
