// Pad (constant / reflect / edge / wrap; negative pads crop) and CenterCropPad. Each
// output axis gets a table from output to input index, -1 meaning "the pad value".
#include <cstring>
#include <string>

#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

Expected<PadMode> ParsePadMode(const KernelContext& context) {
  const std::string mode = context.attr_string("mode", "constant");
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return context.Error(ErrorCode::kInvalidModel, "unknown pad mode '" + mode + "'");
}

// Input index for output index `o` of an axis of size `dim` padded by `begin` in front.
int64_t SourceIndex(PadMode mode, int64_t o, int64_t begin, int64_t dim) {
  const int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : dim - 1;
    case PadMode::kWrap: return ((i % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      const int64_t r = ((i % period) + period) % period;
      return r < dim ? r : period - r;
    }
  }
  return -1;
}

// Pads and value as the opset defines them: attributes before 11, inputs since (axes
// since 18). The value is one element of the data's dtype.
Status ReadPadArguments(KernelContext& context, const Tensor& data, std::vector<int64_t>& pads, Tensor& value) {
  const int64_t rank = data.rank();
  value = Tensor::Zeros(data.dtype(), {});
  if (context.opset() < 11) {
    pads = context.attr_ints(context.opset() < 2 ? "paddings" : "pads");
    ONNX_AMP_RETURN_IF_ERROR(StoreDouble(context, value, 0, context.attr_float("value", 0.0f)));
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* pads_tensor, RequiredInput(context, 1));
    ONNX_AMP_ASSIGN_OR_RETURN(pads, ReadInt64List(context, *pads_tensor, "pads"));
    if (const Tensor* v = context.input(2); v != nullptr && v->num_elements() > 0) {
      if (v->dtype() != data.dtype() || v->num_elements() != 1) {
        return context.Error(ErrorCode::kInvalidModel, "constant_value must be one " +
                                                           std::string(DTypeName(data.dtype())) + " element");
      }
      std::memcpy(value.raw_data(), v->raw_data(), DTypeSize(data.dtype()));
    }
  }
  std::vector<int64_t> axes;
  if (const Tensor* a = context.opset() >= 18 ? context.input(3) : nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(axes, ReadInt64List(context, *a, "axes"));
    ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, axes, rank));
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  const int64_t count = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * count) {
    return context.Error(ErrorCode::kInvalidModel, "pads has " + std::to_string(pads.size()) + " entries, expected " +
                                                       std::to_string(2 * count));
  }
  std::vector<int64_t> full(2 * rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    full[axes[i]] = pads[i];
    full[rank + axes[i]] = pads[count + i];
  }
  pads = std::move(full);
  return Status::Ok();
}

}  // namespace

Status PadKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const PadMode mode, ParsePadMode(context));
  std::vector<int64_t> pads;
  Tensor value;
  ONNX_AMP_RETURN_IF_ERROR(ReadPadArguments(context, *data, pads, value));
  const int64_t rank = data->rank();
  Shape out_shape(rank);
  std::vector<std::vector<int64_t>> maps(rank);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t dim = data->dim(k);
    out_shape[k] = dim + pads[k] + pads[rank + k];
    if (out_shape[k] < 0) {
      return context.Error(ErrorCode::kInvalidModel, "pads crop axis " + std::to_string(k) + " below size 0");
    }
    const bool pads_axis = pads[k] > 0 || pads[rank + k] > 0;
    if (mode != PadMode::kConstant && pads_axis && dim == 0) {
      return context.Error(ErrorCode::kInvalidModel, "cannot pad an empty axis in a non-constant mode");
    }
    maps[k].resize(out_shape[k]);
    for (int64_t o = 0; o < out_shape[k]; ++o) maps[k][o] = SourceIndex(mode, o, pads[k], dim);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  MappedCopy(context.threads(), DTypeSize(data->dtype()), data->shape(), data->raw_data(), out_shape, maps,
             out->raw_data(), value.raw_data());
  return Status::Ok();
}

Status CenterCropPadKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* shape_tensor, RequiredInput(context, 1));
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> sizes, ReadInt64List(context, *shape_tensor, "shape"));
  const int64_t rank = data->rank();
  std::vector<int64_t> axes = context.attr_ints("axes");
  if (!context.has_attribute("axes")) {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, axes, rank));
  if (sizes.size() != axes.size()) {
    return context.Error(ErrorCode::kInvalidModel, "shape has " + std::to_string(sizes.size()) + " entries for " +
                                                       std::to_string(axes.size()) + " axes");
  }
  Shape out_shape = data->shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) return context.Error(ErrorCode::kInvalidModel, "shape has a negative dimension");
    out_shape[axes[i]] = sizes[i];
  }
  // Cropping starts at floor((in - out) / 2); padding puts floor((out - in) / 2) in front.
  std::vector<std::vector<int64_t>> maps(rank);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t in = data->dim(k);
    const int64_t out = out_shape[k];
    maps[k].resize(out);
    for (int64_t o = 0; o < out; ++o) {
      const int64_t i = out <= in ? o + (in - out) / 2 : o - (out - in) / 2;
      maps[k][o] = i >= 0 && i < in ? i : -1;
    }
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  const Tensor zero = Tensor::Zeros(data->dtype(), {});
  MappedCopy(context.threads(), DTypeSize(data->dtype()), data->shape(), data->raw_data(), out_shape, maps,
             out->raw_data(), zero.raw_data());
  return Status::Ok();
}

}  // namespace onnx_amp
