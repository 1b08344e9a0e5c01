#include "ops/conv/window_geometry.h"

#include <algorithm>
#include <string>

namespace onnx_amp {
namespace {

// Reads an ints attribute of `rank` values, or `rank` copies of `fallback` when absent.
Expected<std::vector<int64_t>> PerDim(const KernelContext& context, const char* name, size_t rank,
                                      int64_t fallback, size_t multiple = 1) {
  std::vector<int64_t> values = context.attr_ints(name);
  if (!context.has_attribute(name)) values.assign(rank * multiple, fallback);
  if (values.size() != rank * multiple) {
    return context.Error(ErrorCode::kInvalidModel, std::string(name) + " has " + std::to_string(values.size()) +
                                                       " values, expected " + std::to_string(rank * multiple));
  }
  return values;
}

Status ReadCommon(const KernelContext& context, const Shape& in, const std::vector<int64_t>& kernel_fallback,
                  WindowGeometry& g) {
  const size_t rank = in.size();
  g.in = in;
  g.kernel = context.has_attribute("kernel_shape") ? context.attr_ints("kernel_shape") : kernel_fallback;
  if (g.kernel.size() != rank) {
    return context.Error(ErrorCode::kInvalidModel, "kernel has " + std::to_string(g.kernel.size()) +
                                                       " dims, input has " + std::to_string(rank) + " spatial dims");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(g.strides, PerDim(context, "strides", rank, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(g.dilations, PerDim(context, "dilations", rank, 1));
  for (size_t i = 0; i < rank; ++i) {
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1) {
      return context.Error(ErrorCode::kInvalidModel, "kernel_shape, strides and dilations must be positive");
    }
  }
  return Status::Ok();
}

// Splits a total pad between begin and end; SAME_UPPER puts the odd one at the end.
// The half is floored, as the ONNX reference does, so a negative total (output_shape
// larger than the natural size) grows the output at the end.
void SplitPad(int64_t total, bool odd_at_end, int64_t& begin, int64_t& end) {
  const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
  begin = odd_at_end ? half : total - half;
  end = total - begin;
}

}  // namespace

Expected<WindowGeometry> ForwardWindow(const KernelContext& context, const Shape& in,
                                       const std::vector<int64_t>& kernel_fallback, bool ceil_mode) {
  WindowGeometry g;
  ONNX_AMP_RETURN_IF_ERROR(ReadCommon(context, in, kernel_fallback, g));
  const size_t rank = in.size();
  const std::string auto_pad = context.attr_string("auto_pad", "NOTSET");
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  g.out.assign(rank, 0);
  if (auto_pad == "NOTSET") {
    ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> pads, PerDim(context, "pads", rank, 0, 2));
    for (size_t i = 0; i < rank; ++i) {
      g.pads_begin[i] = pads[i];
      g.pads_end[i] = pads[i + rank];
      if (pads[i] < 0 || pads[i + rank] < 0) return context.Error(ErrorCode::kInvalidModel, "negative pads");
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < rank; ++i) {
      const int64_t out = (in[i] + g.strides[i] - 1) / g.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + g.DilatedKernel(i) - in[i]);
      SplitPad(total, auto_pad == "SAME_UPPER", g.pads_begin[i], g.pads_end[i]);
    }
  } else if (auto_pad != "VALID") {
    return context.Error(ErrorCode::kInvalidModel, "unknown auto_pad '" + auto_pad + "'");
  }
  for (size_t i = 0; i < rank; ++i) {
    const int64_t span = in[i] + g.pads_begin[i] + g.pads_end[i] - g.DilatedKernel(i);
    if (span < 0) {
      return context.Error(ErrorCode::kInvalidModel, "the window is larger than the padded input in spatial dim " +
                                                         std::to_string(i));
    }
    int64_t out = span / g.strides[i] + 1;
    if (ceil_mode && span % g.strides[i] != 0) {
      ++out;
      if ((out - 1) * g.strides[i] >= in[i] + g.pads_begin[i]) --out;
    }
    g.out[i] = out;
  }
  return g;
}

Expected<WindowGeometry> TransposedWindow(const KernelContext& context, const Shape& in,
                                          const std::vector<int64_t>& kernel) {
  WindowGeometry g;
  ONNX_AMP_RETURN_IF_ERROR(ReadCommon(context, in, kernel, g));
  const size_t rank = in.size();
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding, PerDim(context, "output_padding", rank, 0));
  const std::string auto_pad = context.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return context.Error(ErrorCode::kInvalidModel, "unknown auto_pad '" + auto_pad + "'");
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  g.out.assign(rank, 0);
  std::vector<int64_t> output_shape = context.attr_ints("output_shape");
  if (output_shape.size() > rank) output_shape.erase(output_shape.begin(), output_shape.end() - rank);
  if (!output_shape.empty() && output_shape.size() != rank) {
    return context.Error(ErrorCode::kInvalidModel, "output_shape does not match the spatial rank");
  }
  const bool explicit_pads = context.has_attribute("pads") && !same;
  std::vector<int64_t> pads;
  if (explicit_pads) {
    ONNX_AMP_ASSIGN_OR_RETURN(pads, PerDim(context, "pads", rank, 0, 2));
  }
  for (size_t i = 0; i < rank; ++i) {
    const int64_t full = g.strides[i] * (in[i] - 1) + output_padding[i] + g.DilatedKernel(i);
    if (explicit_pads || (auto_pad == "VALID") || (!same && output_shape.empty())) {
      g.pads_begin[i] = explicit_pads ? pads[i] : 0;
      g.pads_end[i] = explicit_pads ? pads[i + rank] : 0;
      g.out[i] = output_shape.empty() ? full - g.pads_begin[i] - g.pads_end[i] : output_shape[i];
    } else {
      // Pads follow from the requested size (SAME: in * stride).
      g.out[i] = output_shape.empty() ? in[i] * g.strides[i] : output_shape[i];
      SplitPad(full - g.out[i], auto_pad == "SAME_UPPER", g.pads_begin[i], g.pads_end[i]);
    }
    if (g.out[i] < 0) return context.Error(ErrorCode::kInvalidModel, "negative ConvTranspose output size");
  }
  return g;
}

}  // namespace onnx_amp
