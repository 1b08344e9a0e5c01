// Cast (target dtype from the `to` attribute) and CastLike (from input 1's dtype)
// between all numeric dtypes and bool. String and float8 types are unsupported.
#include <algorithm>

#include "ops/common/cast_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename From, typename To>
void CastRange(const From* src, To* dst, int64_t count) {
  if constexpr (std::is_same_v<From, To>) {
    std::copy(src, src + count, dst);
  } else if constexpr ((kIsLowPrecision<From> && std::is_same_v<To, float>) ||
                       (std::is_same_v<From, float> && kIsLowPrecision<To>)) {
    StoreAs(src, dst, count);  // the bulk converters
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = CastValue<From, To>(src[i]);
  }
}

Status CastTo(KernelContext& context, const Tensor& input, DType target) {
  return DispatchDType<kMaskAll>(context, input.dtype(), [&](auto from_tag) -> Status {
    using From = typename decltype(from_tag)::type;
    return DispatchDType<kMaskAll>(context, target, [&](auto to_tag) -> Status {
      using To = typename decltype(to_tag)::type;
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor* output, context.AllocateOutput(0, target, input.shape()));
      const From* src = input.data<From>();
      To* dst = output->data<To>();
      context.threads().ParallelFor(input.num_elements(), kParallelGrain, [&](int64_t begin, int64_t end) {
        CastRange(src + begin, dst + begin, end - begin);
      });
      return Status::Ok();
    });
  });
}

Status Cast(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, RequiredInput(context, 0));
  if (!context.has_attribute("to")) return context.Error(ErrorCode::kInvalidModel, "attribute 'to' is missing");
  const int64_t to = context.attr_int("to", 0);
  std::optional<DType> target = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!target) return context.Error(ErrorCode::kUnsupported, "cast to ONNX type " + std::to_string(to) + " is not supported");
  return CastTo(context, *input, *target);
}

Status CastLike(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* like, RequiredInput(context, 1));
  return CastTo(context, *input, like->dtype());
}

}  // namespace

void RegisterCastCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Cast", DeviceKind::kCpu, Cast});
  registry.Register({"", "CastLike", DeviceKind::kCpu, CastLike});
}

}  // namespace onnx_amp
