// Conv (1-D/2-D/3-D, groups incl. depthwise, dilations, pads, auto_pad, bias) through
// oneDNN, NC[D]HW tensors reordered per call into the layouts its direct kernels choose
// (see RunDnnlConv). float32 runs as is; bfloat16 runs natively (bf16 operands, float32
// accumulation, Y rounded by the primitive, or a float32 Y with a residual) where the CPU
// has an optimised kernel that pays (bf16_kernel_choice.h); float16 (and bfloat16
// elsewhere) is widened exactly to float32. The float32 sums are rounded to the output
// dtype once. float64 runs a plain loop. Constant weights are
// kept in the primitive's preferred layout from run to run; a fused residual
// (KernelContext::fused_addend) is added by a sum post-op before the activation, which
// runs as fused_activation.h says. X, Y and the residual may be stored channels-last
// (runtime/executor/plan_layouts.h): oneDNN then reads and writes them as they are.
// 2-D convolutions with at most 16 output pixels (or small ones of more) and constant
// weights run on the few-pixels kernel instead (few_pixels_conv.h): they are bound by
// reading the weights (or by oneDNN's per-call cost).
// 3x3 stride-1 convolutions of many channels run on oneDNN's Winograd kernels
// (winograd_choice.h). A float16/bfloat16 first layer (few input channels, a
// channels-last Y) runs on a loop of its own that writes Y as stored (few_channels_conv.h).
#include <string>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/float_compute.h"
#include "ops/common/fused_activation.h"
#include "ops/common/onednn_utils.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/few_channels_conv.h"
#include "ops/conv/few_pixels_conv.h"
#include "ops/conv/winograd_choice.h"
#include "ops/conv/window_geometry.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

struct ConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  WindowGeometry window;
};

std::string ConvKey(const ConvShape& s, dt operand_type, bool has_bias) {
  const WindowGeometry& g = s.window;
  return "conv/" + std::to_string(static_cast<int>(operand_type)) + "/" + std::to_string(s.batch) + "/" +
         std::to_string(s.in_channels) + "/" + std::to_string(s.out_channels) + "/" + std::to_string(s.group) + "/" +
         dnn::DimsKey(g.in) + "/" + dnn::DimsKey(g.kernel) + "/" + dnn::DimsKey(g.strides) + "/" +
         dnn::DimsKey(g.dilations) + "/" + dnn::DimsKey(g.pads_begin) + "/" + dnn::DimsKey(g.pads_end) +
         (has_bias ? "/bias" : "");
}

// Input channels per group up to which oneDNN's direct JIT convolution outruns its
// brgemm one, which it lists first: a first layer on 1 to 3 image channels (measured
// on one AVX-512 core: 1 channel 2.7x, 3 channels 1.05-1.1x; from 8 channels on the
// brgemm kernel is as fast or faster). The direct kernel also reads such an input in
// NCHW as it is, without a reorder; but it writes channel-blocked outputs only, so for a
// channels-last Y the brgemm kernel, which writes it directly, is faster overall, unless
// Y has 16 channels (dnn::ChannelBlockedIsChannelsLast): described as channel-blocked,
// such a Y needs no reorder. On a batch-32 Fashion-MNIST first layer (1 to 16 channels)
// the direct kernel took 0.03 ms against the brgemm kernel's 0.08.
constexpr int64_t kDirectKernelMaxChannels = 4;

// Moves `pd` to oneDNN's direct JIT kernel of the ISA its first choice, a brgemm kernel,
// uses ("brgconv:avx512_core" -> "jit:avx512_core"). False, with `pd` moved past its
// last implementation, when there is none.
bool PreferDirectKernel(dnnl::convolution_forward::primitive_desc& pd) {
  const std::string first = pd.impl_info_str();
  const std::string brgemm = "brgconv:";
  if (first.rfind(brgemm, 0) != 0) return true;
  const std::string direct = "jit:" + first.substr(brgemm.size());
  while (pd.next_impl()) {
    if (pd.impl_info_str() == direct) return true;
  }
  return false;
}

// Which of X, Y and the fused addend are stored channels-last
// (KernelContext::input_channels_last / output_channels_last).
struct ConvLayouts {
  bool x = false, y = false, addend = false;
};

// Runs the convolution with `post_op`; bias (float32) and addend (Y's shape, any float
// dtype but float64: a sum post-op before the activation) may be null. X is passed as
// `x_type` and Y as `y_type`: the operand type and float32, or float16/bfloat16 that
// Execute widens into (rounds out of) a float32 primitive's layouts; a bfloat16
// primitive writes a bfloat16 Y itself, rounding its float32 sums as those reorders do.
// Unsupported when bfloat16 has no optimised implementation here.
Status RunDnnlConv(const ConvShape& s, dt operand_type, const void* x, dt x_type, const dnn::WeightsSource& w,
                   const float* bias, const Tensor* addend, const FusedActivation& post_op, const ConvLayouts& layouts,
                   void* y, dt y_type) {
  const WindowGeometry& g = s.window;
  dnnl::memory::dims x_dims{s.batch, s.in_channels}, y_dims{s.batch, s.out_channels}, w_dims;
  if (s.group > 1) w_dims = {s.group, s.out_channels / s.group, s.in_channels / s.group};
  else w_dims = {s.out_channels, s.in_channels};
  dnnl::memory::dims dilations;
  for (size_t i = 0; i < g.rank(); ++i) {
    x_dims.push_back(g.in[i]);
    y_dims.push_back(g.out[i]);
    w_dims.push_back(g.kernel[i]);
    dilations.push_back(g.dilations[i] - 1);  // oneDNN counts the gaps
  }
  const auto x_md = dnn::ActivationDesc(x_dims, operand_type, layouts.x);
  const auto w_md = dnn::PlainDesc(w_dims, operand_type);
  const auto b_md = dnn::PlainDesc({s.out_channels}, dt::f32);
  const bool direct_kernel =
      s.in_channels / s.group <= kDirectKernelMaxChannels && (!layouts.y || dnn::ChannelBlockedIsChannelsLast(y_dims));
  const dt y_primitive_type = operand_type == dt::bf16 && y_type == dt::bf16 ? dt::bf16 : dt::f32;
  const auto y_md = direct_kernel && layouts.y ? dnn::ChannelBlockedDesc(y_dims, y_primitive_type)
                                               : dnn::ActivationDesc(y_dims, y_primitive_type, layouts.y);
  const bool need_optimized = operand_type != dt::f32;
  // Winograd: constant weights are transformed once, into the inference kernels' own
  // layout (transforming 512 x 512 x 3 x 3 weights took 58 ms, far more than the
  // convolution); weights that change (training) go to the training kernels, which take
  // them channel-blocked and transform them on each call.
  const bool winograd =
      operand_type == dt::f32 && WinogradApplies(s.in_channels, s.out_channels, s.group, s.window);
  const bool constant_weights = w.packed != nullptr;
  const std::string key = ConvKey(s, operand_type, bias != nullptr) +
                          (winograd ? (constant_weights ? "/winograd" : "/winograd_training") : "") +
                          ActivationKey(post_op) +
                          (addend ? "/sum" + std::to_string(static_cast<int>(addend->dtype())) : "") +
                          (y_primitive_type == dt::bf16 ? "/bf16_y" : "") + "/layouts" +
                          std::to_string(layouts.x) + std::to_string(layouts.y) + std::to_string(layouts.addend);
  double multiply_adds = static_cast<double>(s.in_channels / s.group);
  for (const dnnl::memory::dim extent : y_dims) multiply_adds *= static_cast<double>(extent);
  for (const dnnl::memory::dim extent : g.kernel) multiply_adds *= static_cast<double>(extent);
  if (operand_type == dt::bf16) {
    double weight_elements = 1.0;
    for (const dnnl::memory::dim extent : w_dims) weight_elements *= static_cast<double>(extent);
    if (!NativeBf16Pays(multiply_adds, weight_elements)) return Unsupported("float32 kernels outrun bfloat16 ones here");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(auto primitive, dnn::CachedPrimitive(key, multiply_adds, [&]() {
    const dnnl::memory::dims strides(g.strides.begin(), g.strides.end());
    const dnnl::memory::dims pad_l(g.pads_begin.begin(), g.pads_begin.end());
    const dnnl::memory::dims pad_r(g.pads_end.begin(), g.pads_end.end());
    // Every layout is oneDNN's choice: its direct kernels want channel-blocked tensors,
    // and on plain ones it falls back to im2col and a GEMM, several times slower.
    // Execute reorders X, Y and unpacked weights per call (AddRelayout).
    const dnnl::memory::desc x_any(x_dims, operand_type, dnnl::memory::format_tag::any);
    const dnnl::memory::desc w_any(w_dims, operand_type, dnnl::memory::format_tag::any);
    const dnnl::memory::desc y_any(y_dims, y_primitive_type, dnnl::memory::format_tag::any);
    const auto desc_of = [&](dnnl::prop_kind kind, dnnl::algorithm algorithm) {
      return bias != nullptr ? dnnl::convolution_forward::desc(kind, algorithm, x_any, w_any, b_md, y_any, strides,
                                                               dilations, pad_l, pad_r)
                             : dnnl::convolution_forward::desc(kind, algorithm, x_any, w_any, y_any, strides,
                                                               dilations, pad_l, pad_r);
    };
    dnnl::primitive_attr attr;
    dnn::PrepareAttr(attr);
    dnnl::post_ops ops;
    if (addend != nullptr) ops.append_sum(1.0f);
    AppendActivationPostOp(post_op, ops);
    attr.set_post_ops(ops);
    std::optional<dnnl::convolution_forward::primitive_desc> pd;
    if (winograd) {
      try {
        const auto kind = constant_weights ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
        pd.emplace(desc_of(kind, dnnl::algorithm::convolution_winograd), attr, dnn::CpuEngine());
      } catch (const dnnl::error&) {
        // No Winograd kernel for this CPU or these post-ops: the direct one below.
      }
    }
    if (!pd) {
      const auto desc = desc_of(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct);
      pd.emplace(desc, attr, dnn::CpuEngine());
      if (direct_kernel && !PreferDirectKernel(*pd)) pd.emplace(desc, attr, dnn::CpuEngine());
    }
    if (need_optimized && !dnn::IsOptimized(*pd)) return std::optional<dnn::Primitive>();
    dnn::Primitive primitive = dnn::MakePrimitive<dnnl::convolution_forward>(*pd);
    dnn::AddRelayout(primitive, DNNL_ARG_SRC, false, x_md, pd->src_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_WEIGHTS, false, w_md, pd->weights_desc());
    dnn::AddRelayout(primitive, DNNL_ARG_DST, true, y_md, pd->dst_desc());
    if (addend != nullptr) {
      dnn::SetInitialOutput(primitive, DNNL_ARG_DST, dnn::ActivationDesc(y_dims, dnn::DataType(addend->dtype()), layouts.addend),
                            pd->dst_desc());
    }
    return std::optional<dnn::Primitive>(std::move(primitive));
  }));
  if (!primitive) return Unsupported("no optimised oneDNN convolution for these operands");
  ONNX_AMP_ASSIGN_OR_RETURN(const auto weights, dnn::ResolveWeights(*primitive, key, w_md, w));
  std::unordered_map<int, std::pair<dnnl::memory::desc, const void*>> args{
      {DNNL_ARG_SRC, {dnn::WithDataType(x_md, x_type), x}},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, {dnn::WithDataType(y_md, y_type), y}}};
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, std::make_pair(b_md, bias));
  return dnn::Execute(*primitive, args, addend ? addend->raw_data() : nullptr);
}

// float64: direct loops; `addend` (may be null, may be y itself) is added to each sum.
void ReferenceConv(const ConvShape& s, const double* x, const double* w, const double* bias, const double* addend,
                   double* y) {
  const WindowGeometry& g = s.window;
  const size_t rank = g.rank();
  const int64_t in_per_group = s.in_channels / s.group, out_per_group = s.out_channels / s.group;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  for (size_t i = 0; i < rank; ++i) in_size *= g.in[i], out_size *= g.out[i], kernel_size *= g.kernel[i];
  std::vector<int64_t> o_index(rank), k_index(rank);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t oc = 0; oc < s.out_channels; ++oc) {
      const int64_t group = oc / out_per_group;
      for (int64_t o = 0; o < out_size; ++o) {
        for (int64_t rest = o, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) o_index[i] = rest % g.out[i], rest /= g.out[i];
        double sum = bias ? bias[oc] : 0.0;
        for (int64_t ic = 0; ic < in_per_group; ++ic) {
          const double* x_plane = x + (n * s.in_channels + group * in_per_group + ic) * in_size;
          const double* w_plane = w + (oc * in_per_group + ic) * kernel_size;
          for (int64_t k = 0; k < kernel_size; ++k) {
            int64_t offset = 0;
            bool inside = true;
            for (int64_t rest = k, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
              k_index[i] = rest % g.kernel[i], rest /= g.kernel[i];
            }
            for (size_t i = 0; i < rank && inside; ++i) {
              const int64_t pos = o_index[i] * g.strides[i] - g.pads_begin[i] + k_index[i] * g.dilations[i];
              inside = pos >= 0 && pos < g.in[i];
              offset = offset * g.in[i] + pos;
            }
            if (inside) sum += x_plane[offset] * w_plane[k];
          }
        }
        const int64_t at = (n * s.out_channels + oc) * out_size + o;
        y[at] = addend ? sum + addend[at] : sum;
      }
    }
  }
}

// float16/bfloat16 X, W and Y: bfloat16 natively where the CPU's optimised kernels pay
// (bf16_kernel_choice.h), else on operands widened exactly to float32.
Status LowPrecisionConv(KernelContext& context, const ConvShape& s, const Tensor& x, const Tensor& w,
                        const dnn::WeightsSource& w_source, const float* bias, const Tensor* addend,
                        const FusedActivation& activation, const ConvLayouts& layouts, Tensor& y) {
  const DType dtype = x.dtype();
  if (dtype == DType::kBFloat16) {
    // Y (with the residual summed in) straight from the primitive, then the activation on
    // the rounded values: against a float32 copy rounded by a pass of ours, the bundled
    // CNN's mixed_bfloat16 run at batch 32 after a pause took 0.58 ms instead of 0.62,
    // ResNet-18's at batch 32 64.4 ms instead of 67.9.
    const Status status = RunDnnlConv(s, dt::bf16, x.raw_data(), dt::bf16, w_source, bias, addend,
                                      FusedActivation{}, layouts, y.raw_data(), dt::bf16);
    if (status.ok()) {
      ApplyActivation(activation, y, context.threads());
      return Status::Ok();
    }
    if (status.code() != ErrorCode::kUnsupported) return context.Error(status.code(), status.message());
  }
  // A float32 copy of Y where the float32 path needs one. Pooled: a fresh vector
  // of an activation's size is fresh pages, zeroed by the kernel on first touch, on every
  // call.
  Tensor y_wide;
  if (addend != nullptr || activation.kind != FusedActivationKind::kNone) {
    ONNX_AMP_ASSIGN_OR_RETURN(y_wide, context.ScratchFloat32(y.num_elements()));
  }
  // Widening to float32 is exact: the same products, accumulated in float32. Packed
  // weights are widened once, on the run that packs them.
  std::vector<float> w_f32;
  dnn::WeightsSource widened = w_source;
  widened.plain = [&] {
    w_f32 = ToFloat32(w);
    return static_cast<const void*>(w_f32.data());
  };
  if (addend == nullptr && activation.kind == FusedActivationKind::kNone) {
    // Execute widens X into the primitive's layout and rounds Y out of it, one pass each.
    const dt io_type = dnn::DataType(dtype);
    const Status status = RunDnnlConv(s, dt::f32, x.raw_data(), io_type, widened, bias, nullptr,
                                      FusedActivation{}, layouts, y.raw_data(), io_type);
    return status.ok() ? status : context.Error(status.code(), status.message());
  }
  // With an activation Y is rounded from a float32 copy as the activation is applied, and
  // X is widened here too: routing it through Execute made ResNet-18's mixed_bfloat16
  // convolutions at batch 32 2-3% slower. So is the residual: oneDNN's own float16 ->
  // float32 reorder runs one element at a time (a ResNet-18 residual convolution took 4x
  // its float32 time).
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<Tensor> wide,
                            Float32Copies(context, addend != nullptr ? std::vector<const Tensor*>{&x, addend}
                                                                     : std::vector<const Tensor*>{&x}));
  float* y_f32 = y_wide.data<float>();
  const Status status = RunDnnlConv(s, dt::f32, wide[0].data<float>(), dt::f32, widened, bias,
                                    addend != nullptr ? &wide[1] : nullptr, FusedActivation{}, layouts, y_f32, dt::f32);
  if (!status.ok()) return context.Error(status.code(), status.message());
  StoreWithActivation(y_f32, y, activation, context.threads());
  return Status::Ok();
}

}  // namespace

Status ConvCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  const Tensor* w = context.input(1);
  const Tensor* b = context.input(2);
  if (x == nullptr || w == nullptr) return context.Error(ErrorCode::kInvalidModel, "Conv needs inputs X and W");
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank()) {
    return context.Error(ErrorCode::kUnsupported, "Conv takes 1-D to 3-D inputs with matching weights; X " +
                                                      ShapeToString(x->shape()) + ", W " + ShapeToString(w->shape()));
  }
  if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "X, W and B have different dtypes");
  }
  ConvShape s;
  s.batch = x->dim(0);
  s.in_channels = x->dim(1);
  s.out_channels = w->dim(0);
  s.group = context.attr_int("group", 1);
  if (s.group < 1 || s.in_channels != w->dim(1) * s.group || s.out_channels % s.group != 0) {
    return context.Error(ErrorCode::kInvalidModel, "channels do not match group " + std::to_string(s.group) + ": X " +
                                                       ShapeToString(x->shape()) + ", W " + ShapeToString(w->shape()));
  }
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != s.out_channels)) {
    return context.Error(ErrorCode::kInvalidModel, "B must have shape [" + std::to_string(s.out_channels) + "]");
  }
  const Shape spatial(x->shape().begin() + 2, x->shape().end());
  const std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(s.window, ForwardWindow(context, spatial, kernel, false));
  if (s.window.kernel != kernel) return context.Error(ErrorCode::kInvalidModel, "kernel_shape differs from W");
  Shape y_shape{s.batch, s.out_channels};
  y_shape.insert(y_shape.end(), s.window.out.begin(), s.window.out.end());
  const DType dtype = x->dtype();
  const FusedActivation activation = context.fused_activation();
  const Tensor* addend = context.fused_addend();
  ConvLayouts layouts;
  layouts.x = context.input_channels_last(0);
  layouts.y = context.output_channels_last(0);
  layouts.addend = context.fused_addend_channels_last();
  // A MaxPool folded in (KernelContext::pools_output): the plan folds one only where the
  // first-layer loops pool Y (FewChannelsConvPoolsOutput).
  const bool pooled = context.pools_output();
  if (pooled) {
    if (addend != nullptr || !layouts.y || s.window.rank() != 2 || !FewChannelsConvPoolsOutput(*w, s.group)) {
      return context.Error(ErrorCode::kInternal, "the MaxPool folded into this Conv needs the first-layer loops");
    }
    y_shape[2] /= 2;
    y_shape[3] /= 2;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, dtype, y_shape));
  if (y->num_elements() == 0) return Status::Ok();
  if (x->num_elements() == 0) return context.Error(ErrorCode::kInvalidModel, "empty input with a non-empty output");
  // B as float32, for every path but float64's loops.
  const bool float_operands = dtype == DType::kFloat32 || IsLowPrecision(dtype);
  const std::vector<float> bias = b != nullptr && float_operands ? ToFloat32(*b) : std::vector<float>();
  const float* bias_data = bias.empty() ? nullptr : bias.data();
  if (pooled) {
    const Status status = FewChannelsConv(context, *x, layouts.x, *w, bias_data, s.window, activation, true, *y);
    return status.ok() ? status : context.Error(status.code(), status.message());
  }
  if (addend != nullptr && (addend->dtype() != dtype || addend->shape() != y_shape)) {
    return context.Error(ErrorCode::kInvalidModel, "the residual added to the output is " +
                                                       std::string(DTypeName(addend->dtype())) +
                                                       ShapeToString(addend->shape()) + ", the output " +
                                                       std::string(DTypeName(dtype)) + ShapeToString(y_shape));
  }
  FewPixelsConv few_pixels{x, w, {}, addend, y, layouts.x, layouts.y, layouts.addend, s.group, &s.window};
  if (TakesFewPixels(context, few_pixels)) {
    few_pixels.bias = bias;
    const Status status = RunFewPixelsConv(context, few_pixels, activation);
    return status.ok() ? status : context.Error(status.code(), status.message());
  }
  if (dtype == DType::kFloat64) {
    if (layouts.x || layouts.y || layouts.addend) {
      return context.Error(ErrorCode::kUnsupported, "float64 convolutions take NCHW tensors only");
    }
    ReferenceConv(s, x->data<double>(), w->data<double>(), b ? b->data<double>() : nullptr,
                  addend ? addend->data<double>() : nullptr, y->data<double>());
    ApplyActivation(activation, *y, context.threads());
    return Status::Ok();
  }
  if (!float_operands) return context.UnsupportedDType(dtype);
  dnn::PackedWeights* packed = dnn::PackedWeightsOf(context, 1);
  const void* w_data = w->raw_data();
  const dnn::WeightsSource w_source{[w_data] { return w_data; }, packed, w_data};
  if (addend == nullptr && TakesFewChannelsConv(dtype, x->shape(), w->shape(), s.group, layouts.y, s.window)) {
    const Status status = FewChannelsConv(context, *x, layouts.x, *w, bias_data, s.window, activation, false, *y);
    return status.ok() ? status : context.Error(status.code(), status.message());
  }
  if (dtype == DType::kFloat32) {
    const FusedActivation post_op = ExactPostOp(activation);
    Status status = RunDnnlConv(s, dt::f32, x->raw_data(), dt::f32, w_source, bias_data, addend, post_op, layouts,
                                y->data<float>(), dt::f32);
    if (!status.ok()) return context.Error(status.code(), status.message());
    if (post_op.kind == FusedActivationKind::kNone) ApplyActivation(activation, *y, context.threads());
    return Status::Ok();
  }
  return LowPrecisionConv(context, s, *x, *w, w_source, bias_data, addend, activation, layouts, *y);
}

}  // namespace onnx_amp
