#include "ops/common/fused_activation.h"

#include <algorithm>
#include <bit>
#include <limits>

#include <onnx/onnx_pb.h>

#include "ops/common/elementwise_math.h"
#include "ops/common/float_compute.h"
#include "ops/common/relu_bits.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Elements per parallel chunk: large enough to amortise the dispatch, small enough to
// stay in L2 between the rounding and the activation.
constexpr int64_t kChunk = 16384;

std::optional<float> FloatAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == name && attr.type() == onnx::AttributeProto::FLOAT) return attr.f();
  }
  return std::nullopt;
}

template <typename T, typename Op>
void MapRange(T* data, int64_t begin, int64_t end, const Op& op) {
  for (int64_t i = begin; i < end; ++i) data[i] = StoreValue<T>(op(LoadValue(data[i])));
}

// The same for float16/bfloat16 elements, a block at a time through the vectorised
// conversions (one element at a time, the software rounding dominated a mixed CNN run):
// widened exactly, the activation in float32, rounded once, as MapRange computes.
template <typename Op>
void MapLowPrecisionRange(Tensor& out, int64_t begin, int64_t end, const Op& op) {
  constexpr int64_t kBlock = 512;
  float block[kBlock];
  for (int64_t i = begin; i < end; i += kBlock) {
    const int64_t n = std::min(kBlock, end - i);
    LoadFloat32Block(out, i, n, block);
    for (int64_t j = 0; j < n; ++j) block[j] = op(block[j]);
    StoreFloat32Block(block, i, n, out);
  }
}

// Applies the activation to out[begin, end).
void ApplyRange(const FusedActivation& activation, Tensor& out, int64_t begin, int64_t end) {
  if (activation.kind == FusedActivationKind::kRelu && IsLowPrecision(out.dtype())) {
    // On the rounded values' bits, instead of widening them again for ReluOp and
    // rounding them once more.
    uint16_t* bits = static_cast<uint16_t*>(out.raw_data()) + begin;
    return ReluOnLowPrecisionBits(out.dtype(), bits, bits, end - begin);
  }
  if (activation.kind == FusedActivationKind::kRelu && out.dtype() == DType::kFloat32) {
    float* values = out.data<float>() + begin;
    return ReluFloat32(values, values, end - begin);
  }
  WithActivationOp(activation, [&](const auto& op) {
    switch (out.dtype()) {
      case DType::kFloat32: return MapRange(out.data<float>(), begin, end, op);
      case DType::kFloat64: return MapRange(out.data<double>(), begin, end, op);
      case DType::kFloat16:
      case DType::kBFloat16: return MapLowPrecisionRange(out, begin, end, op);
      case DType::kUndefined:
      case DType::kUInt8:
      case DType::kInt8:
      case DType::kUInt16:
      case DType::kInt16:
      case DType::kInt32:
      case DType::kInt64:
      case DType::kString:
      case DType::kBool:
      case DType::kUInt32:
      case DType::kUInt64:
      case DType::kComplex64:
      case DType::kComplex128:
        break;
    }
    ONNX_AMP_ASSERT(false, "fused activations take floating outputs");
  });
}

}  // namespace

std::string ActivationKey(const FusedActivation& activation) {
  switch (activation.kind) {
    case FusedActivationKind::kNone: return "";
    case FusedActivationKind::kRelu: return "/relu";
    case FusedActivationKind::kLeakyRelu:
      return "/leaky" + std::to_string(std::bit_cast<uint32_t>(activation.alpha));
    case FusedActivationKind::kClip:
      return "/clip" + std::to_string(std::bit_cast<uint32_t>(activation.alpha)) + ":" +
             std::to_string(std::bit_cast<uint32_t>(activation.beta));
  }
  return "";
}

FusedActivation ExactPostOp(const FusedActivation& activation) {
  const bool exact = activation.kind == FusedActivationKind::kLeakyRelu && activation.alpha > 0.0f;
  return exact ? activation : FusedActivation{};
}

void AppendActivationPostOp(const FusedActivation& activation, dnnl::post_ops& ops) {
  switch (activation.kind) {
    case FusedActivationKind::kNone: return;
    case FusedActivationKind::kRelu: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    case FusedActivationKind::kLeakyRelu:
      return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, activation.alpha, 0.0f);
    case FusedActivationKind::kClip:
      return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, activation.alpha, activation.beta);
  }
}

void ApplyActivation(const FusedActivation& activation, Tensor& out, ThreadPool& threads) {
  if (activation.kind == FusedActivationKind::kNone) return;
  threads.ParallelFor(out.num_elements(), kChunk,
                      [&](int64_t begin, int64_t end) { ApplyRange(activation, out, begin, end); });
}

void StoreWithActivation(const float* values, Tensor& out, const FusedActivation& activation, ThreadPool& threads) {
  threads.ParallelFor(out.num_elements(), kChunk, [&](int64_t begin, int64_t end) {
    StoreBlockWithActivation(values + begin, out, begin, end - begin, activation);
  });
}

void StoreBlockWithActivation(const float* values, Tensor& out, int64_t begin, int64_t count,
                              const FusedActivation& activation) {
  StoreFloat32Block(values, begin, count, out);
  ApplyRange(activation, out, begin, begin + count);
}

std::optional<FusedActivation> FusableActivation(const onnx::NodeProto& node, int opset,
                                                 const std::function<std::optional<float>(int)>& constant_input) {
  if (!IsOnnxDomain(node.domain())) return std::nullopt;
  const int num_inputs = node.input_size();
  FusedActivation activation;
  if (node.op_type() == "Relu" && num_inputs == 1) {
    activation.kind = FusedActivationKind::kRelu;
    return activation;
  }
  if (node.op_type() == "LeakyRelu" && num_inputs == 1) {
    activation.kind = FusedActivationKind::kLeakyRelu;
    activation.alpha = FloatAttribute(node, "alpha").value_or(0.01f);
    return activation;
  }
  if (node.op_type() != "Clip") return std::nullopt;
  // A missing bound leaves that side open, as the Clip kernel does.
  activation.kind = FusedActivationKind::kClip;
  activation.alpha = -std::numeric_limits<float>::infinity();
  activation.beta = std::numeric_limits<float>::infinity();
  if (opset < 11) {
    if (num_inputs != 1) return std::nullopt;
    activation.alpha = FloatAttribute(node, "min").value_or(activation.alpha);
    activation.beta = FloatAttribute(node, "max").value_or(activation.beta);
    return activation;
  }
  if (num_inputs == 0 || num_inputs > 3) return std::nullopt;
  for (int i = 1; i < num_inputs; ++i) {
    if (node.input(i).empty()) continue;
    const std::optional<float> bound = constant_input(i);
    if (!bound) return std::nullopt;
    (i == 1 ? activation.alpha : activation.beta) = *bound;
  }
  return activation;
}

}  // namespace onnx_amp
