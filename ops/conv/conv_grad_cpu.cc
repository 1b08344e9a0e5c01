// ConvGrad (dY, X, W) -> dX, dW, dB through oneDNN's backward convolutions: dX by
// backward-data, dW and dB together by backward-weights, each primitive cached by
// problem like the forward Conv's, NC[D]HW tensors reordered per call into the layouts
// oneDNN's direct kernels choose (dY once for both where they read it alike). dY, X and
// dX stored channels-last (runtime/executor/plan_layouts.h) are read and written as
// they are where oneDNN has optimised kernels for that layout. float32
// runs as is; bfloat16 runs natively where the CPU has optimised kernels that pay
// (bf16_kernel_choice.h: bf16 operands, float32 accumulation and gradients); float16 (and
// bfloat16 elsewhere) is widened exactly to float32 on the way into those layouts. Each
// gradient is computed in float32 and rounded once to the dtype of dY. 3x3 stride-1
// gradients of many channels run on oneDNN's Winograd kernels (winograd_choice.h). A
// float16/bfloat16 first layer's dW and dB (dX not wanted, few input channels) run on a
// loop of their own that reads dY as stored (few_channels_conv.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/float_compute.h"
#include "ops/common/onednn_utils.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/few_channels_conv.h"
#include "ops/conv/window_geometry.h"
#include "ops/conv/winograd_choice.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

// One convolution as oneDNN describes it (dims of X, W, Y; strides, gaps between
// dilated taps, pads) with its cache key.
struct ConvProblem {
  dnnl::memory::dims x_dims, w_dims, y_dims, strides, dilations, pad_l, pad_r;
  double multiply_adds = 1.0;
  std::string key;
  dt operand = dt::f32;  // the primitives' type of dY, X and W; gradients are float32
  // The types dY and X are passed in: the operand type, or float16/bfloat16 that
  // Execute widens into the primitives' float32 layouts in one pass.
  dt dy_type = dt::f32, x_type = dt::f32;
  // Which of dY, X and dX are stored channels-last.
  bool dy_last = false, x_last = false, dx_last = false;
  bool winograd_shape = false;  // WinogradApplies (winograd_choice.h)

  // The Winograd kernels take float32 operands only.
  bool Winograd() const { return winograd_shape && operand == dt::f32; }

  std::string Key(const char* direction) const {
    return std::string(direction) + "/" + std::to_string(static_cast<int>(operand)) + "/" + key + "/layouts" +
           std::to_string(dy_last) + std::to_string(x_last) + std::to_string(dx_last) + (Winograd() ? "/winograd" : "");
  }

  // How an activation of `dims` stored channels-last or not is described: row-major,
  // channels-last, or, where every channels-last one has exactly 16 channels, oneDNN's
  // 16-channel-blocked layout, the same bytes, in which its direct kernels (the fastest
  // here) take them without a reorder; mixing it with channels-last ones leaves oneDNN
  // only its reference kernels.
  dnnl::memory::desc Stored(const dnnl::memory::dims& dims, dt type, bool channels_last) const {
    if (!channels_last) return dnn::PlainDesc(dims, type);
    const bool all_16 = ((!x_last && !dx_last) || dnn::ChannelBlockedIsChannelsLast(x_dims)) &&
                        (!dy_last || dnn::ChannelBlockedIsChannelsLast(y_dims));
    return all_16 ? dnn::ChannelBlockedDesc(dims, type) : dnn::ActivationDesc(dims, type, true);
  }
};

ConvProblem DescribeProblem(int64_t batch, int64_t channels, int64_t maps, int64_t group, const WindowGeometry& g) {
  ConvProblem p;
  p.x_dims = {batch, channels};
  p.y_dims = {batch, maps};
  if (group > 1) p.w_dims = {group, maps / group, channels / group};
  else p.w_dims = {maps, channels};
  for (size_t i = 0; i < g.rank(); ++i) {
    p.x_dims.push_back(g.in[i]);
    p.y_dims.push_back(g.out[i]);
    p.w_dims.push_back(g.kernel[i]);
    p.strides.push_back(g.strides[i]);
    p.dilations.push_back(g.dilations[i] - 1);  // oneDNN counts the gaps
    p.pad_l.push_back(g.pads_begin[i]);
    p.pad_r.push_back(g.pads_end[i]);
  }
  p.multiply_adds = static_cast<double>(channels / group);
  for (const dnnl::memory::dim extent : p.y_dims) p.multiply_adds *= static_cast<double>(extent);
  for (const int64_t extent : g.kernel) p.multiply_adds *= static_cast<double>(extent);
  p.key = dnn::DimsKey(p.x_dims) + "/" + dnn::DimsKey(p.w_dims) + "/" + dnn::DimsKey(p.strides) + "/" +
          dnn::DimsKey(p.dilations) + "/" + dnn::DimsKey(p.pad_l) + "/" + dnn::DimsKey(p.pad_r);
  return p;
}

dnnl::memory::desc AnyLayout(const dnnl::memory::dims& dims, dt type = dt::f32) {
  return dnnl::memory::desc(dims, type, dnnl::memory::format_tag::any);
}

// The layouts a backward primitive computes X (or dX) and dY in: their stored ones where
// channels-last (`keep_stored`), so that they need no reorder, else oneDNN's choice: its
// direct kernels want channel-blocked layouts, and on row-major ones it falls back to
// im2col and a GEMM, several times slower.
struct ComputeLayouts {
  dnnl::memory::desc x, y;
};

ComputeLayouts Computed(const ConvProblem& p, bool x_last, dt x_type, bool keep_stored) {
  return {keep_stored && x_last ? p.Stored(p.x_dims, x_type, true) : AnyLayout(p.x_dims, x_type),
          keep_stored && p.dy_last ? p.Stored(p.y_dims, p.operand, true) : AnyLayout(p.y_dims, p.operand)};
}

// The forward primitive the backward ones are built against (oneDNN's hint).
dnnl::convolution_forward::primitive_desc ForwardHint(const ConvProblem& p, const ComputeLayouts& layouts,
                                                      dnnl::algorithm algorithm) {
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, algorithm,
                                             dnn::WithDataType(layouts.x, p.operand), AnyLayout(p.w_dims, p.operand),
                                             dnn::PlainDesc({p.y_dims[1]}, dt::f32), layouts.y, p.strides,
                                             p.dilations, p.pad_l, p.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, dnn::CpuEngine());
}

// The first of `make(true)` (channels-last values kept as stored) and `make(false)` that
// oneDNN runs on an optimised kernel; the second alone when nothing is channels-last.
// Null when neither is optimised and `need_optimized`.
template <typename Make>
auto FirstOptimized(bool any_channels_last, bool need_optimized, Make make) -> std::optional<decltype(make(true))> {
  if (any_channels_last) {
    auto pd = make(true);
    if (dnn::IsOptimized(pd)) return pd;
  }
  auto pd = make(false);
  if (need_optimized && !dnn::IsOptimized(pd)) return std::nullopt;
  return pd;
}

// The Winograd primitive `make(algorithm, keep_stored)` builds, in oneDNN's own layouts
// (its Winograd kernels take channel-blocked ones only), where the problem takes the
// Winograd kernels and oneDNN has them; else the first optimised direct one
// (FirstOptimized).
template <typename Make>
auto WinogradOrDirect(const ConvProblem& p, bool any_channels_last, Make make)
    -> std::optional<decltype(make(dnnl::algorithm::convolution_direct, true))> {
  if (p.Winograd()) {
    try {
      return make(dnnl::algorithm::convolution_winograd, false);
    } catch (const dnnl::error&) {
      // No Winograd kernel on this CPU: the direct ones below.
    }
  }
  return FirstOptimized(any_channels_last, p.operand != dt::f32,
                        [&](bool keep_stored) { return make(dnnl::algorithm::convolution_direct, keep_stored); });
}

// One argument as Execute takes it: a descriptor and the data.
using Argument = std::pair<dnnl::memory::desc, const void*>;

// The backward-data primitive; Unsupported for bfloat16 operands without an optimised
// kernel.
Expected<dnn::Primitive> DataPrimitive(const ConvProblem& p) {
  ONNX_AMP_ASSIGN_OR_RETURN(auto primitive, dnn::CachedPrimitive(p.Key("conv_bwd_data"), p.multiply_adds, [&]() {
    const auto pd = WinogradOrDirect(p, p.dx_last || p.dy_last, [&](dnnl::algorithm algorithm, bool keep_stored) {
      const ComputeLayouts layouts = Computed(p, p.dx_last, dt::f32, keep_stored);
      const dnnl::convolution_backward_data::desc desc(algorithm, layouts.x, AnyLayout(p.w_dims, p.operand),
                                                       layouts.y, p.strides, p.dilations, p.pad_l, p.pad_r);
      dnnl::primitive_attr attr;
      dnn::PrepareAttr(attr);
      return dnnl::convolution_backward_data::primitive_desc(desc, attr, dnn::CpuEngine(),
                                                             ForwardHint(p, layouts, algorithm));
    });
    if (!pd) return std::optional<dnn::Primitive>();
    dnn::Primitive primitive = dnn::MakePrimitive<dnnl::convolution_backward_data>(*pd);
    dnn::AddRelayout(primitive, DNNL_ARG_DIFF_DST, false, p.Stored(p.y_dims, p.operand, p.dy_last),
                     pd->diff_dst_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_WEIGHTS, false, dnn::PlainDesc(p.w_dims, p.operand), pd->weights_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_DIFF_SRC, true, p.Stored(p.x_dims, dt::f32, p.dx_last), pd->diff_src_desc());
    return std::optional<dnn::Primitive>(std::move(primitive));
  }));
  if (!primitive) return Unsupported("no optimised oneDNN backward-data convolution for these operands");
  return *std::move(primitive);
}

// The backward-weights primitive (dW and dB); Unsupported for bfloat16 operands without
// an optimised kernel.
Expected<dnn::Primitive> WeightsPrimitive(const ConvProblem& p) {
  const auto b_md = dnn::PlainDesc({p.y_dims[1]}, dt::f32);
  ONNX_AMP_ASSIGN_OR_RETURN(auto primitive, dnn::CachedPrimitive(p.Key("conv_bwd_weights"), p.multiply_adds, [&]() {
    const auto pd = WinogradOrDirect(p, p.x_last || p.dy_last, [&](dnnl::algorithm algorithm, bool keep_stored) {
      const ComputeLayouts layouts = Computed(p, p.x_last, p.operand, keep_stored);
      const dnnl::convolution_backward_weights::desc desc(algorithm, layouts.x, AnyLayout(p.w_dims), b_md, layouts.y,
                                                          p.strides, p.dilations, p.pad_l, p.pad_r);
      dnnl::primitive_attr attr;
      dnn::PrepareAttr(attr);
      return dnnl::convolution_backward_weights::primitive_desc(desc, attr, dnn::CpuEngine(),
                                                                ForwardHint(p, layouts, algorithm));
    });
    if (!pd) return std::optional<dnn::Primitive>();
    dnn::Primitive primitive = dnn::MakePrimitive<dnnl::convolution_backward_weights>(*pd);
    dnn::AddRelayout(primitive, DNNL_ARG_DIFF_DST, false, p.Stored(p.y_dims, p.operand, p.dy_last),
                     pd->diff_dst_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_SRC, false, p.Stored(p.x_dims, p.operand, p.x_last), pd->src_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_DIFF_WEIGHTS, true, dnn::PlainDesc(p.w_dims, dt::f32),
                     pd->diff_weights_desc());
    return std::optional<dnn::Primitive>(std::move(primitive));
  }));
  if (!primitive) return Unsupported("no optimised oneDNN backward-weights convolution for these operands");
  return *std::move(primitive);
}

// Where the backward convolutions read and write: W in the operand type, X and dY as
// ConvProblem says, dX as `dx_type` (float32, or rounded by Execute), dW and dB float32.
// Null for a gradient not wanted.
struct BackwardArguments {
  const void* dy = nullptr;
  const void* w = nullptr;
  const void* x = nullptr;
  void* dx = nullptr;
  dt dx_type = dt::f32;
  float* dw = nullptr;
  float* db = nullptr;
};

// dX = the transposed convolution of dY with W; dW = the correlation of X with dY and
// dB = dY summed over the batch and space. When both primitives read dY in the same
// layout it is moved (reordered, or widened) into it once, not once each.
Status Backward(KernelContext& context, const ConvProblem& p, const BackwardArguments& data) {
  std::optional<dnn::Primitive> backward_data, backward_weights;
  if (data.dx != nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(backward_data, DataPrimitive(p));
  }
  if (data.dw != nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(backward_weights, WeightsPrimitive(p));
  }
  Argument dy{p.Stored(p.y_dims, p.dy_type, p.dy_last), data.dy};
  Tensor moved;
  if (backward_data && backward_weights) {
    const dnn::Relayout* for_data = dnn::InputRelayout(*backward_data, DNNL_ARG_DIFF_DST, dy.first);
    const dnn::Relayout* for_weights = dnn::InputRelayout(*backward_weights, DNNL_ARG_DIFF_DST, dy.first);
    if (for_data != nullptr && for_weights != nullptr && for_data->inner_md == for_weights->inner_md) {
      const int64_t bytes = static_cast<int64_t>(for_data->inner_md.get_size());
      ONNX_AMP_ASSIGN_OR_RETURN(moved, context.ScratchFloat32((bytes + 3) / 4));
      ONNX_AMP_RETURN_IF_ERROR(dnn::MoveInput(*backward_data, DNNL_ARG_DIFF_DST, dy.first, data.dy, moved.raw_data()));
      dy = {for_data->inner_md, moved.raw_data()};
    }
  }
  if (backward_data) {
    ONNX_AMP_RETURN_IF_ERROR(dnn::Execute(*backward_data,
                                          {{DNNL_ARG_DIFF_DST, dy},
                                           {DNNL_ARG_WEIGHTS, {dnn::PlainDesc(p.w_dims, p.operand), data.w}},
                                           {DNNL_ARG_DIFF_SRC, {p.Stored(p.x_dims, data.dx_type, p.dx_last), data.dx}}}));
  }
  if (backward_weights) {
    ONNX_AMP_RETURN_IF_ERROR(
        dnn::Execute(*backward_weights, {{DNNL_ARG_DIFF_DST, dy},
                                         {DNNL_ARG_SRC, {p.Stored(p.x_dims, p.x_type, p.x_last), data.x}},
                                         {DNNL_ARG_DIFF_WEIGHTS, {dnn::PlainDesc(p.w_dims, dt::f32), data.dw}},
                                         {DNNL_ARG_DIFF_BIAS, {dnn::PlainDesc({p.y_dims[1]}, dt::f32), data.db}}}));
  }
  return Status::Ok();
}

// A float32 tensor's own data, or a pooled float32 copy (`holder`) of a float16 or
// bfloat16 one, widened in parallel blocks.
Expected<const float*> Float32Data(KernelContext& context, const Tensor& tensor, Tensor& holder) {
  if (tensor.dtype() == DType::kFloat32) return tensor.data<float>();
  ONNX_AMP_ASSIGN_OR_RETURN(holder, context.ScratchFloat32(tensor.num_elements()));
  float* values = holder.data<float>();
  context.threads().ParallelFor(tensor.num_elements(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    LoadFloat32Block(tensor, begin, end - begin, values + begin);
  });
  return static_cast<const float*>(values);
}

bool Wanted(const KernelContext& context, int index) {
  return index < context.num_outputs() && context.output_used(index);
}

// Where gradient `index` is computed: the output's own float32 buffer, a pooled float32
// buffer for a low-precision output, or a pooled one to discard when the output is not
// wanted but computed anyway (dW without dB and the reverse). Nothing when not `needed`.
struct GradientBuffer {
  Tensor* out = nullptr;  // null: not wanted
  Tensor scratch;
  float* data = nullptr;
  int64_t size = 0;
};

// Without `float32_copy` a wanted low-precision output gets no float32 buffer (data
// stays null): the caller has it written directly.
Expected<GradientBuffer> GradientOutput(KernelContext& context, int index, DType dtype, const Shape& shape,
                                        bool needed, bool float32_copy = true) {
  GradientBuffer buffer;
  if (!needed) return buffer;
  buffer.size = NumElements(shape);
  if (Wanted(context, index)) {
    ONNX_AMP_ASSIGN_OR_RETURN(buffer.out, context.AllocateOutput(index, dtype, shape));
    if (dtype == DType::kFloat32) {
      buffer.data = buffer.out->data<float>();
      return buffer;
    }
    if (!float32_copy) return buffer;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(buffer.scratch, context.ScratchFloat32(buffer.size));
  buffer.data = buffer.scratch.data<float>();
  return buffer;
}

// Rounds a float32 gradient once into its low-precision output.
void Finish(KernelContext& context, GradientBuffer& buffer) {
  if (buffer.out == nullptr || buffer.out->dtype() == DType::kFloat32) return;
  context.threads().ParallelFor(buffer.out->num_elements(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    StoreFromFloat32Range(buffer.data, *buffer.out, begin, end);
  });
}

Status Report(const KernelContext& context, const Status& status) {
  return status.ok() ? status : context.Error(status.code(), status.message());
}

}  // namespace

Status ConvGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* w, FloatInput(context, 2));
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank()) {
    return context.Error(ErrorCode::kInvalidModel, "X and W must be [N, C, spatial...] and [M, C/group, k...]");
  }
  const int64_t group = context.attr_int("group", 1);
  const int64_t n = x->dim(0), channels = x->dim(1), maps = w->dim(0);
  if (group < 1 || channels != w->dim(1) * group || maps % group != 0) {
    return context.Error(ErrorCode::kInvalidModel, "channels do not match group " + std::to_string(group));
  }
  const Shape spatial(x->shape().begin() + 2, x->shape().end());
  const std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(const WindowGeometry g, ForwardWindow(context, spatial, kernel, false));
  if (g.kernel != kernel) return context.Error(ErrorCode::kInvalidModel, "kernel_shape differs from W");
  Shape y_shape{n, maps};
  y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
  if (dy->shape() != y_shape) {
    return context.Error(ErrorCode::kInvalidModel,
                         "dY is " + ShapeToString(dy->shape()) + ", the forward output is " + ShapeToString(y_shape));
  }
  const DType dtype = dy->dtype();
  const bool want_dx = Wanted(context, 0), want_dw = Wanted(context, 1) || Wanted(context, 2);
  if (!want_dx && !want_dw) return Status::Ok();
  ConvProblem problem = DescribeProblem(n, channels, maps, group, g);
  problem.winograd_shape = WinogradApplies(channels, maps, group, g);
  problem.dy_last = context.input_channels_last(0);
  problem.x_last = context.input_channels_last(1);
  problem.dx_last = want_dx && context.output_channels_last(0);
  double weight_elements = 1.0;
  for (const dnnl::memory::dim extent : problem.w_dims) weight_elements *= static_cast<double>(extent);
  const bool native = dtype == DType::kBFloat16 && NativeBf16Pays(problem.multiply_adds, weight_elements);
  // Off the native path Execute rounds dX into its low-precision output directly.
  ONNX_AMP_ASSIGN_OR_RETURN(GradientBuffer dx, GradientOutput(context, 0, dtype, x->shape(), want_dx, native));
  ONNX_AMP_ASSIGN_OR_RETURN(GradientBuffer dw, GradientOutput(context, 1, dtype, w->shape(), want_dw));
  ONNX_AMP_ASSIGN_OR_RETURN(GradientBuffer db, GradientOutput(context, 2, dtype, {maps}, want_dw));
  if (x->num_elements() == 0 || dy->num_elements() == 0) {
    // Nothing flows back: every gradient is zero.
    for (GradientBuffer* buffer : {&dx, &dw, &db}) {
      if (buffer->data == nullptr) {
        if (buffer->out != nullptr) std::memset(buffer->out->raw_data(), 0, buffer->out->bytes());
        continue;
      }
      std::fill_n(buffer->data, buffer->size, 0.0f);
      Finish(context, *buffer);
    }
    return Status::Ok();
  }
  if (!want_dx && x->dtype() == dtype && w->dtype() == dtype &&
      TakesFewChannelsConv(dtype, x->shape(), w->shape(), group, problem.dy_last, g)) {
    ONNX_AMP_RETURN_IF_ERROR(
        Report(context, FewChannelsWeightGrad(context, *dy, *x, problem.x_last, g, dw.data, db.data)));
    Finish(context, dw);
    Finish(context, db);
    return Status::Ok();
  }
  if (native) {
    // bfloat16 operands run natively where the CPU has optimised kernels that pay: the
    // products are exact in float32 and accumulate in float32, as on widened operands.
    problem.operand = problem.dy_type = problem.x_type = dt::bf16;
    const Status status =
        Backward(context, problem, {dy->raw_data(), w->raw_data(), x->raw_data(), want_dx ? dx.data : nullptr,
                                    dt::f32, want_dw ? dw.data : nullptr, want_dw ? db.data : nullptr});
    if (status.ok()) {
      for (GradientBuffer* buffer : {&dx, &dw, &db}) Finish(context, *buffer);
      return Status::Ok();
    }
    if (status.code() != ErrorCode::kUnsupported) return Report(context, status);
    problem.operand = dt::f32;
  }
  // Widening to float32 is exact: the same products, accumulated in float32. dY and X are
  // widened (and dX rounded) by Execute on the way into (and out of) the primitives'
  // layouts; W, small, is widened here.
  problem.dy_type = dnn::DataType(dy->dtype());
  problem.x_type = dnn::DataType(x->dtype());
  Tensor w_wide;
  const float* w_data = nullptr;
  if (want_dx) {
    ONNX_AMP_ASSIGN_OR_RETURN(w_data, Float32Data(context, *w, w_wide));
  }
  const bool direct = want_dx && dtype != DType::kFloat32;
  BackwardArguments data{dy->raw_data(), w_data, x->raw_data(), nullptr, dt::f32, want_dw ? dw.data : nullptr,
                    want_dw ? db.data : nullptr};
  if (want_dx) {
    data.dx = direct ? dx.out->raw_data() : static_cast<void*>(dx.data);
    data.dx_type = direct ? dnn::DataType(dtype) : dt::f32;
  }
  ONNX_AMP_RETURN_IF_ERROR(Report(context, Backward(context, problem, data)));
  if (!direct) Finish(context, dx);
  Finish(context, dw);
  Finish(context, db);
  return Status::Ok();
}

}  // namespace onnx_amp
