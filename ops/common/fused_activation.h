// The activation the execution plan folds into a Conv/Gemm/MatMul node; the fused node
// changes no number. A float16/bfloat16 output is rounded first and the activation then
// runs on the rounded values with the separate kernel's own math
// (ops/common/elementwise_math.h), as the two unfused nodes compute. A float32
// output gets a oneDNN eltwise post-op where oneDNN computes exactly that (ExactPostOp),
// and the same element-wise pass over the stored output otherwise.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <dnnl.hpp>

#include "ops/common/elementwise_math.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx { class NodeProto; }

namespace onnx_amp {

// The activation `node` computes, in the form a fusing kernel applies: Relu, LeakyRelu
// (alpha), or Clip with its bounds from attributes (before opset 11) or from constant
// scalar inputs, which `constant_input(index)` returns (nullopt when that input is not
// one; absent inputs leave their side open). nullopt for every other node. These are
// the activations the execution plan may fold into a Conv / Gemm / MatMul.
std::optional<FusedActivation> FusableActivation(const onnx::NodeProto& node, int opset,
                                                 const std::function<std::optional<float>(int)>& constant_input);

// A fragment for primitive cache keys ("" for none).
std::string ActivationKey(const FusedActivation& activation);

// The part of `activation` oneDNN applies to a float32 output exactly as the separate
// node does: LeakyRelu with a positive slope (it keeps NaN and signed zeros). oneDNN's
// relu and clip turn NaN into a bound and -0 into +0, where Relu and Clip keep them,
// so for those this is kNone and the kernel calls ApplyActivation after the primitive.
FusedActivation ExactPostOp(const FusedActivation& activation);

// Calls fn(op) with the element-wise functor of the activation (nothing for kNone), for
// a kernel that applies it to float32/float64 values inside its own loop: op(x) gives
// the bits ApplyActivation gives for x.
template <typename Fn>
void WithActivationOp(const FusedActivation& activation, Fn&& fn) {
  switch (activation.kind) {
    case FusedActivationKind::kNone: return;
    case FusedActivationKind::kRelu: return fn(ReluOp{});
    case FusedActivationKind::kLeakyRelu: return fn(LeakyReluOp{activation.alpha});
    case FusedActivationKind::kClip:
      return fn([lo = activation.alpha, hi = activation.beta](auto x) {
        using C = decltype(x);
        return ClipOp{}(x, static_cast<C>(lo), static_cast<C>(hi));
      });
  }
}

// Appends the activation as an eltwise post-op (nothing for kNone).
void AppendActivationPostOp(const FusedActivation& activation, dnnl::post_ops& ops);

// Applies the activation in place to every element of a float32, float64, float16 or
// bfloat16 tensor.
void ApplyActivation(const FusedActivation& activation, Tensor& out, ThreadPool& threads);

// Rounds float32 values once into `out` (float32, float16 or bfloat16) and applies the
// activation to the rounded values, block by block while they are in cache.
void StoreWithActivation(const float* values, Tensor& out, const FusedActivation& activation, ThreadPool& threads);
// The same for out's elements [begin, begin + count) from values[0, count), on the
// calling thread.
void StoreBlockWithActivation(const float* values, Tensor& out, int64_t begin, int64_t count,
                              const FusedActivation& activation);

}  // namespace onnx_amp
