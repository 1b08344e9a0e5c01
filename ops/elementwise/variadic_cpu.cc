// Variadic element-wise folds with broadcasting: Max Min Sum Mean. float16/bfloat16
// fold in a float32 accumulator and round once at the end.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename C>
struct DivideBy {
  C count;
  ONNX_AMP_HD C operator()(C x) const { return x / count; }
};

struct KeepValue {
  template <typename C> C operator()(C x) const { return x; }
};

// acc (output-shaped, compute type C) = first input broadcast to the output shape.
template <typename C, typename T>
Status BroadcastInto(const KernelContext& context, const Shape& output_shape, const Tensor& input, C* acc) {
  ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(std::vector<Shape>{output_shape, input.shape()}));
  const T* src = input.data<T>();
  const int64_t stride = plan.inner_strides[1];
  ForEachRun(plan, 0, plan.total, [&](const OperandOffsets& offsets, int64_t pos, int64_t length) {
    if (stride == 1) {
      LoadAs(src + offsets[1], acc + pos, length);
      return;
    }
    C value;
    LoadAs(src + offsets[1], &value, 1);
    for (int64_t i = 0; i < length; ++i) acc[pos + i] = value;
  });
  return Status::Ok();
}

// The fold when no input broadcasts (a gradient's sum over the branches that read a
// value): one parallel pass over blocks that stay in L1, each folded in a local
// accumulator and written out once, where the broadcasting fold below makes a whole
// float32 copy of the output and passes over it once per input (on one thread for the
// first). Each element sees the same operations in the same order.
template <typename T, typename C, typename Op>
void FoldSameShape(ThreadPool& threads, const std::vector<const Tensor*>& inputs, const Op& op, bool mean,
                   Tensor& output) {
  constexpr int64_t kBlock = 1024;
  constexpr bool kWidened = !std::is_same_v<T, C>;  // float16/bfloat16 in a float32 accumulator
  const int64_t total = output.num_elements();
  const C count = static_cast<C>(inputs.size());
  // Grain: at least ~16K elements a task, below which waking a thread costs more than it saves.
  threads.ParallelFor((total + kBlock - 1) / kBlock, 16, [&](int64_t begin, int64_t end) {
    C acc[kBlock];
    [[maybe_unused]] float widened[kWidened ? kBlock : 1];
    for (int64_t block = begin; block < end; ++block) {
      const int64_t offset = block * kBlock, n = std::min(kBlock, total - offset);
      const auto block_of = [&](const Tensor& input) -> const C* {
        if constexpr (kWidened) return Float32BlockOf(input, offset, n, widened);
        else return input.data<T>() + offset;
      };
      std::memcpy(acc, block_of(*inputs[0]), static_cast<size_t>(n) * sizeof(C));
      for (size_t k = 1; k < inputs.size(); ++k) BinaryRun(acc, 1, block_of(*inputs[k]), 1, acc, n, op);
      if (mean) UnaryRun(acc, acc, n, DivideBy<C>{count});
      if constexpr (kWidened) StoreFloat32Block(acc, offset, n, output);
      else std::memcpy(output.data<T>() + offset, acc, static_cast<size_t>(n) * sizeof(C));
    }
  });
}

template <uint32_t kMask, typename Op>
Status Fold(KernelContext& context, const Op& op, bool mean) {
  std::vector<const Tensor*> inputs;
  std::vector<Shape> shapes;
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (const Tensor* input = context.input(i)) {
      if (!inputs.empty()) ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *inputs.front(), *input));
      inputs.push_back(input);
      shapes.push_back(input->shape());
    }
  }
  if (inputs.empty()) return context.Error(ErrorCode::kInvalidModel, "needs at least one input");
  Expected<Shape> output_shape = BroadcastShapes(shapes);
  if (!output_shape.ok()) return context.Error(output_shape.status().code(), output_shape.status().message());

  return DispatchDType<kMask>(context, inputs.front()->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* output, context.AllocateOutput(0, DTypeOf<T>::value, *output_shape));
    if (std::all_of(shapes.begin(), shapes.end(), [&](const Shape& shape) { return shape == *output_shape; })) {
      FoldSameShape<T, C>(context.threads(), inputs, op, mean, *output);
      return Status::Ok();
    }
    const int64_t total = output->num_elements();
    std::vector<C> scratch;
    C* acc;
    if constexpr (std::is_same_v<T, C>) {
      acc = output->data<T>();
    } else {
      scratch.resize(total);
      acc = scratch.data();
    }
    ONNX_AMP_RETURN_IF_ERROR((BroadcastInto<C, T>(context, *output_shape, *inputs.front(), acc)));
    for (size_t k = 1; k < inputs.size(); ++k) {
      ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, PlanBroadcast<2>(context, {output, inputs[k]}));
      BinaryBroadcast<C>(context.threads(), plan, acc, inputs[k]->template data<T>(), acc, op);
    }
    if (mean) UnaryMap<C>(context.threads(), acc, acc, total, DivideBy<C>{static_cast<C>(inputs.size())});
    if constexpr (!std::is_same_v<T, C>) UnaryMap<C>(context.threads(), acc, output->data<T>(), total, KeepValue{});
    return Status::Ok();
  });
}

Status Max(KernelContext& context) { return Fold<kMaskNumeric>(context, MaxOp{}, false); }
Status Min(KernelContext& context) { return Fold<kMaskNumeric>(context, MinOp{}, false); }
Status Sum(KernelContext& context) { return Fold<kMaskFloats>(context, AddOp{}, false); }
Status Mean(KernelContext& context) { return Fold<kMaskFloats>(context, AddOp{}, true); }

}  // namespace

void RegisterVariadicCpuKernels(KernelRegistry& registry) {
  const KernelDef defs[] = {
      {"", "Max", DeviceKind::kCpu, Max},
      {"", "Min", DeviceKind::kCpu, Min},
      {"", "Sum", DeviceKind::kCpu, Sum},
      {"", "Mean", DeviceKind::kCpu, Mean},
  };
  for (KernelDef def : defs) {
    def.channels_last = kElementWiseChannelsLast;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
