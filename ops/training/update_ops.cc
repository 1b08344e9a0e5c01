// The fused ops of one optimizer step on float32 master weights: UnscaleAndCheck,
// GlobalNormClip, and one update op per optimizer, which may also round the new weight
// into its low-precision copy in the same pass. Their arithmetic is
// ops/training/gradient_math.h and optimizer_math.h, shared with the loss scaler and the
// CUDA kernels. Elements are independent (the clip norm is summed serially in parameter
// order), so splitting the work over threads leaves every bit unchanged. A set skip
// flag hands the weight and slots back as they came (the same buffers): a skipped step
// is bit-identical by construction.
#include <onnx/onnx_pb.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/cpu_clones.h"
#include "ops/common/float32_buffers.h"
#include "ops/training/gradient_math.h"
#include "ops/training/optimizer_math.h"
#include "ops/training/training_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Elements per chunk handed to a worker: large enough to pay for the hand-off.
constexpr int64_t kGrain = 1 << 15;

Expected<const Tensor*> Float32Input(const KernelContext& context, int index, const std::string& what) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr || tensor->dtype() != DType::kFloat32) {
    return context.Error(ErrorCode::kInvalidModel,
                         what + " (input " + std::to_string(index) + ") must be a float32 tensor");
  }
  return tensor;
}

template <typename T>
Expected<T> ScalarInput(const KernelContext& context, int index, const std::string& what) {
  const Tensor* tensor = context.input(index);
  constexpr DType kDType = DTypeOf<T>::value;
  if (tensor == nullptr || tensor->dtype() != kDType || tensor->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, what + " (input " + std::to_string(index) + ") must be a " +
                                                       std::string(DTypeName(kDType)) + " scalar");
  }
  return *tensor->data<T>();
}

template <typename T>
Status WriteScalar(KernelContext& context, int index, T value) {
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, DTypeOf<T>::value, {}));
  *out->data<T>() = value;
  return Status::Ok();
}

// Inputs `first`.. of a variadic op: float32 tensors.
Expected<std::vector<const Tensor*>> VariadicFloat32(const KernelContext& context, int first) {
  std::vector<const Tensor*> tensors;
  for (int k = first; k < context.num_inputs(); ++k) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* tensor, Float32Input(context, k, "gradient " + std::to_string(k - first)));
    tensors.push_back(tensor);
  }
  if (tensors.empty()) return context.Error(ErrorCode::kInvalidModel, "needs at least one gradient");
  return tensors;
}

// The tensors of one update op: weight, gradient and up to two slots (nullptr when the
// optimizer keeps fewer), all float32 of the weight's shape, and the weight's float16 or
// bfloat16 copy (nullptr when the node has none), written at output `copy_output`.
struct UpdateTensors {
  const Tensor* weight = nullptr;
  const Tensor* gradient = nullptr;
  const Tensor* slots[2] = {nullptr, nullptr};
  const Tensor* copy = nullptr;
  int copy_output = 0;
};

// Reads the copy (input `copy_input`) where the node asks for its new value (output
// 1 + num_slots): a float16 or bfloat16 tensor of the weight's shape.
Status ReadCopy(const KernelContext& context, int num_slots, int copy_input, UpdateTensors& tensors) {
  const int copy_output = 1 + num_slots;
  const bool wants_copy = context.num_outputs() > copy_output && !context.node().output(copy_output).empty();
  const Tensor* copy = context.input(copy_input);
  if (!wants_copy && copy == nullptr) return Status::Ok();
  if (!wants_copy || copy == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "the copy (input " + std::to_string(copy_input) +
                                                       ") and its new value (output " + std::to_string(copy_output) +
                                                       ") come together");
  }
  if ((copy->dtype() != DType::kFloat16 && copy->dtype() != DType::kBFloat16) ||
      copy->shape() != tensors.weight->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "the copy (input " + std::to_string(copy_input) +
                                                       ") must be float16 or bfloat16 of the weight's shape " +
                                                       ShapeToString(tensors.weight->shape()));
  }
  tensors.copy = copy;
  tensors.copy_output = copy_output;
  return Status::Ok();
}

// Reads weight (input 0), gradient (1), slots (inputs 2..2+num_slots) and the copy (input
// `copy_input`); a slot may be absent only where `slot_optional` (plain SGD's velocity).
Expected<UpdateTensors> ReadUpdateTensors(const KernelContext& context, int num_slots, bool slot_optional,
                                          int copy_input) {
  UpdateTensors tensors;
  ONNX_AMP_ASSIGN_OR_RETURN(tensors.weight, Float32Input(context, 0, "weight"));
  ONNX_AMP_ASSIGN_OR_RETURN(tensors.gradient, Float32Input(context, 1, "gradient"));
  if (tensors.gradient->shape() != tensors.weight->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "gradient " + ShapeToString(tensors.gradient->shape()) +
                                                       " and weight " + ShapeToString(tensors.weight->shape()) +
                                                       " differ in shape");
  }
  for (int k = 0; k < num_slots; ++k) {
    if (slot_optional && context.input(2 + k) == nullptr) continue;
    ONNX_AMP_ASSIGN_OR_RETURN(tensors.slots[k], Float32Input(context, 2 + k, "slot " + std::to_string(k)));
    if (tensors.slots[k]->shape() != tensors.weight->shape()) {
      return context.Error(ErrorCode::kInvalidModel, "slot " + std::to_string(k) + " " +
                                                         ShapeToString(tensors.slots[k]->shape()) + " and weight " +
                                                         ShapeToString(tensors.weight->shape()) + " differ in shape");
    }
    if (context.num_outputs() <= 1 + k) {
      return context.Error(ErrorCode::kInvalidModel,
                           "slot " + std::to_string(k) + " is given but its new value is no output");
    }
  }
  ONNX_AMP_RETURN_IF_ERROR(ReadCopy(context, num_slots, copy_input, tensors));
  return tensors;
}

// Runs element(weight, slot0, slot1, gradient) over [begin, end), reading from `in_*`
// and writing to `out_*` (the same arrays when updating in place, else apart: ivdep
// spares the in-place case the vectoriser's overlap check, which it fails). The slot
// count is a template argument so that the loop has no per-element branch and vectorises.
template <int kSlots, typename Element>
ONNX_AMP_CPU_CLONES void UpdateRange(const float* in_w, const float* const* in_s, const float* in_g, float* out_w,
                                     float* const* out_s, int64_t begin, int64_t end, const Element& element) {
#pragma GCC ivdep
  for (int64_t i = begin; i < end; ++i) {
    float weight = in_w[i];
    float slot0 = kSlots > 0 ? in_s[0][i] : 0.0f;
    float slot1 = kSlots > 1 ? in_s[1][i] : 0.0f;
    element(weight, slot0, slot1, in_g[i]);
    out_w[i] = weight;
    if constexpr (kSlots > 0) out_s[0][i] = slot0;
    if constexpr (kSlots > 1) out_s[1][i] = slot1;
  }
}

// Output 0 is the new weight, output 1 + k the new slot k, then the new copy where the
// node has one. `element(weight, slot0, slot1, gradient)` updates one element (absent
// slots read 0 and are not written). With the node's in_place attribute the new values
// overwrite the weight, slot and copy buffers, which then are the outputs (the trainer's
// own tensors: no allocation, half the memory traffic of fresh outputs); a skip leaves
// them untouched either way. Each chunk's new weights are rounded into the copy while
// they are still in cache.
template <typename Element>
Status ApplyUpdate(KernelContext& context, const UpdateTensors& in, bool skip, Element element) {
  const bool in_place = context.attr_int("in_place", 0) != 0;
  if (skip || in_place) {
    context.SetOutput(0, *in.weight);
    for (int k = 0; k < 2; ++k) {
      if (in.slots[k] != nullptr) context.SetOutput(1 + k, *in.slots[k]);
    }
    if (in.copy != nullptr) context.SetOutput(in.copy_output, *in.copy);
    if (skip) return Status::Ok();
  }
  const Shape& shape = in.weight->shape();
  // In place, the inputs' buffers are written: the op's contract with the caller that
  // sets in_place (runtime/train/update_graph.h).
  float* out_w = const_cast<float*>(in.weight->data<float>());
  if (!in_place) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * new_weight, context.AllocateOutput(0, DType::kFloat32, shape));
    out_w = new_weight->data<float>();
  }
  float* out_s[2] = {nullptr, nullptr};
  const float* in_s[2] = {nullptr, nullptr};
  int num_slots = 0;
  for (int k = 0; k < 2; ++k) {
    if (in.slots[k] == nullptr) continue;
    ++num_slots;
    in_s[k] = in.slots[k]->data<float>();
    out_s[k] = const_cast<float*>(in_s[k]);
    if (in_place) continue;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * new_slot, context.AllocateOutput(1 + k, DType::kFloat32, shape));
    out_s[k] = new_slot->data<float>();
  }
  // The copy written: the one fed in (in place: the same buffer), or a fresh output.
  Tensor out_copy;
  if (in.copy != nullptr) {
    out_copy = *in.copy;
    if (!in_place) {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor * new_copy, context.AllocateOutput(in.copy_output, in.copy->dtype(), shape));
      out_copy = *new_copy;
    }
  }
  const float* in_w = in.weight->data<float>();
  const float* in_g = in.gradient->data<float>();
  context.threads().ParallelFor(in.weight->num_elements(), kGrain, [&](int64_t begin, int64_t end) {
    switch (num_slots) {
      case 0: UpdateRange<0>(in_w, in_s, in_g, out_w, out_s, begin, end, element); break;
      case 1: UpdateRange<1>(in_w, in_s, in_g, out_w, out_s, begin, end, element); break;
      default: UpdateRange<2>(in_w, in_s, in_g, out_w, out_s, begin, end, element); break;
    }
    // Rounded to nearest even: the bits a Cast gives.
    if (out_copy.defined()) StoreFromFloat32Range(out_w, out_copy, begin, end);
  });
  return Status::Ok();
}

Expected<float> LearningRate(const KernelContext& context, int index) {
  ONNX_AMP_ASSIGN_OR_RETURN(const float learning_rate, ScalarInput<float>(context, index, "learning_rate"));
  if (!std::isfinite(learning_rate)) {
    return context.Error(ErrorCode::kInvalidArgument, "learning rate must be finite");
  }
  return learning_rate;
}

Status AdamFamily(KernelContext& context, bool decoupled_decay) {
  ONNX_AMP_ASSIGN_OR_RETURN(const UpdateTensors in, ReadUpdateTensors(context, 2, false, 7));
  ONNX_AMP_ASSIGN_OR_RETURN(const float learning_rate, LearningRate(context, 4));
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t step, ScalarInput<int64_t>(context, 5, "step"));
  ONNX_AMP_ASSIGN_OR_RETURN(const bool skip, ScalarInput<bool>(context, 6, "skip"));
  if (step < 0) return context.Error(ErrorCode::kInvalidArgument, "step must be >= 0");
  const float beta1 = context.attr_float("beta1", 0.9f);
  const float beta2 = context.attr_float("beta2", 0.999f);
  const float epsilon = context.attr_float("epsilon", 1e-7f);
  const float alpha = AdamStepSize(learning_rate, beta1, beta2, step);
  const float decay_step = decoupled_decay ? learning_rate * context.attr_float("weight_decay", 0.004f) : 0.0f;
  return ApplyUpdate(context, in, skip, [=](float& weight, float& m, float& v, float gradient) {
    AdamUpdate(weight, m, v, gradient, alpha, beta1, beta2, epsilon, decay_step);
  });
}

// The non-finite bits of in[begin, end) (tested on the scaled values), and out = in * inv
// there unless `out` is null (the same array as `in` in place, else apart).
ONNX_AMP_CPU_CLONES uint32_t CheckAndUnscale(const float* in, float* out, float inv, int64_t begin, int64_t end) {
  uint32_t flags = 0;
  if (out == nullptr) {
    for (int64_t i = begin; i < end; ++i) flags |= NonFiniteBit(in[i]);
    return flags;
  }
#pragma GCC ivdep
  for (int64_t i = begin; i < end; ++i) {
    flags |= NonFiniteBit(in[i]);
    out[i] = in[i] * inv;
  }
  return flags;
}

}  // namespace

Status UnscaleAndCheckKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const float scale, ScalarInput<float>(context, 0, "scale"));
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    return context.Error(ErrorCode::kInvalidArgument, "the loss scale must be positive and finite");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<const Tensor*> gradients, VariadicFloat32(context, 1));
  const int count = static_cast<int>(gradients.size());
  if (context.num_outputs() != count + 2) {
    return context.Error(ErrorCode::kInvalidModel, "has " + std::to_string(count) + " gradients, so needs " +
                                                       std::to_string(count + 2) + " outputs");
  }
  const float inv = InverseLossScale(scale);
  // In place, the gradients' buffers are written: the op's contract with the caller that
  // sets in_place (runtime/train/update_graph.h).
  const bool in_place = context.attr_int("in_place", 0) != 0;
  int64_t first_non_finite = -1;
  for (int k = 0; k < count; ++k) {
    const Tensor& gradient = *gradients[k];
    const float* in = gradient.data<float>();
    float* out = nullptr;
    if (inv == 1.0f || in_place) {
      context.SetOutput(k + 2, gradient);  // scale 1: nothing to multiply, check only
      if (inv != 1.0f) out = const_cast<float*>(in);
    } else {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor * unscaled, context.AllocateOutput(k + 2, DType::kFloat32, gradient.shape()));
      out = unscaled->data<float>();
    }
    std::atomic<bool> non_finite{false};
    context.threads().ParallelFor(gradient.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
      if (AnyNonFinite(CheckAndUnscale(in, out, inv, begin, end))) non_finite.store(true, std::memory_order_relaxed);
    });
    if (non_finite.load() && first_non_finite < 0) first_non_finite = k;
  }
  ONNX_AMP_RETURN_IF_ERROR(WriteScalar<bool>(context, 0, first_non_finite >= 0));
  return WriteScalar<int64_t>(context, 1, first_non_finite);
}

Status GlobalNormClipKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t micro_batches, ScalarInput<int64_t>(context, 0, "micro_batches"));
  if (micro_batches < 1) return context.Error(ErrorCode::kInvalidArgument, "micro_batches must be >= 1");
  const float max_norm = context.attr_float("max_norm", 0.0f);
  if (!(max_norm >= 0.0f) || !std::isfinite(max_norm)) {
    return context.Error(ErrorCode::kInvalidModel, "max_norm must be finite and >= 0");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<const Tensor*> gradients, VariadicFloat32(context, 1));
  if (context.num_outputs() != static_cast<int>(gradients.size())) {
    return context.Error(ErrorCode::kInvalidModel, "needs one output per gradient");
  }
  double sum_of_squares = 0.0;
  if (max_norm > 0.0f) {
    for (const Tensor* gradient : gradients) {
      const float* g = gradient->data<float>();
      for (int64_t i = 0; i < gradient->num_elements(); ++i) sum_of_squares += static_cast<double>(g[i]) * g[i];
    }
  }
  const double factor = MeanClipFactor(sum_of_squares, micro_batches, max_norm);
  for (size_t k = 0; k < gradients.size(); ++k) {
    const Tensor& gradient = *gradients[k];
    if (factor == 1.0) {
      context.SetOutput(static_cast<int>(k), gradient);
      continue;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * clipped,
                              context.AllocateOutput(static_cast<int>(k), DType::kFloat32, gradient.shape()));
    const float* in = gradient.data<float>();
    float* out = clipped->data<float>();
    context.threads().ParallelFor(gradient.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(in[i] * factor);
    });
  }
  return Status::Ok();
}

Status SgdUpdateKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const UpdateTensors in, ReadUpdateTensors(context, 1, true, 5));
  ONNX_AMP_ASSIGN_OR_RETURN(const float learning_rate, LearningRate(context, 3));
  ONNX_AMP_ASSIGN_OR_RETURN(const bool skip, ScalarInput<bool>(context, 4, "skip"));
  const float momentum = context.attr_float("momentum", 0.0f);
  const bool nesterov = context.attr_int("nesterov", 0) != 0;
  if (momentum != 0.0f && in.slots[0] == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "momentum needs the velocity input");
  }
  return ApplyUpdate(context, in, skip, [=](float& weight, float& velocity, float&, float gradient) {
    SgdUpdate(weight, velocity, gradient, learning_rate, momentum, nesterov);
  });
}

Status AdamUpdateKernel(KernelContext& context) { return AdamFamily(context, false); }

Status AdamWUpdateKernel(KernelContext& context) { return AdamFamily(context, true); }

Status RmspropUpdateKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const UpdateTensors in, ReadUpdateTensors(context, 1, false, 5));
  ONNX_AMP_ASSIGN_OR_RETURN(const float learning_rate, LearningRate(context, 3));
  ONNX_AMP_ASSIGN_OR_RETURN(const bool skip, ScalarInput<bool>(context, 4, "skip"));
  const float rho = context.attr_float("rho", 0.9f);
  const float epsilon = context.attr_float("epsilon", 1e-7f);
  return ApplyUpdate(context, in, skip, [=](float& weight, float& v, float&, float gradient) {
    RmspropUpdate(weight, v, gradient, learning_rate, rho, epsilon);
  });
}

}  // namespace onnx_amp
