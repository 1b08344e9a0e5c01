// Dropout. In inference (the default) the output is the input itself and the optional
// mask is all true. In training mode (opset 12+, training_mode input true) an element
// is kept when a uniform draw in [0, 1) is >= ratio and scaled by 1 / (1 - ratio);
// the draws come from MT19937 seeded with `seed` and formed as NumPy's random_sample
// forms them, so a seeded node reproduces the ONNX reference bit for bit.
#include <random>
#include <string>

#include "ops/common/dtype_dispatch.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

// A double in [0, 1) from two 32-bit draws (53 random bits).
double NextUniform(std::mt19937& engine) {
  const uint32_t a = static_cast<uint32_t>(engine()) >> 5;
  const uint32_t b = static_cast<uint32_t>(engine()) >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

Status WriteAllKeptMask(KernelContext& context, const Tensor& data) {
  if (context.num_outputs() < 2 || !context.output_used(1)) return Status::Ok();
  // Before opset 10 the mask has the data's dtype.
  const DType mask_dtype = context.opset() < 10 ? data.dtype() : DType::kBool;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * mask, context.AllocateOutput(1, mask_dtype, data.shape()));
  for (int64_t i = 0; i < mask->num_elements(); ++i) {
    ONNX_AMP_RETURN_IF_ERROR(StoreDouble(context, *mask, i, 1.0));
  }
  return Status::Ok();
}

}  // namespace

Status DropoutKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  bool training = false;
  double ratio = 0.5;
  // Before opset 12 there is no training_mode input: the runtime runs those as inference.
  if (context.opset() >= 12) {
    if (const Tensor* t = context.input(2)) {
      ONNX_AMP_ASSIGN_OR_RETURN(const double flag, ReadScalarAsDouble(context, *t, "training_mode"));
      training = flag != 0.0;
    }
    if (const Tensor* r = context.input(1)) {
      ONNX_AMP_ASSIGN_OR_RETURN(ratio, ReadScalarAsDouble(context, *r, "ratio"));
    }
  }
  if (!training || ratio == 0.0) {
    context.SetOutput(0, *data);
    return WriteAllKeptMask(context, *data);
  }
  if (!(ratio > 0.0 && ratio < 1.0)) {
    return context.Error(ErrorCode::kInvalidArgument, "ratio must be in [0, 1), got " + std::to_string(ratio));
  }
  std::mt19937 engine(context.has_attribute("seed") ? static_cast<uint32_t>(context.attr_int("seed", 0))
                                                    : std::random_device{}());
  const int64_t count = data->num_elements();
  std::vector<bool> keep(count);
  for (int64_t i = 0; i < count; ++i) keep[i] = NextUniform(engine) >= ratio;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), data->shape()));
  const double scale = 1.0 / (1.0 - ratio);
  ONNX_AMP_RETURN_IF_ERROR(DispatchDType<kMaskFloats>(context, data->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = data->data<T>();
    T* y = out->data<T>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        y[i] = T::FromFloat(keep[i] ? x[i].ToFloat() * static_cast<float>(scale) : 0.0f);
      } else {
        y[i] = keep[i] ? x[i] * static_cast<T>(scale) : T(0);
      }
    }
    return Status::Ok();
  }));
  if (context.num_outputs() < 2 || !context.output_used(1)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * mask, context.AllocateOutput(1, DType::kBool, data->shape()));
  for (int64_t i = 0; i < count; ++i) mask->data<bool>()[i] = keep[i];
  return Status::Ok();
}

}  // namespace onnx_amp
