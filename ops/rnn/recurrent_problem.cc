#include "ops/rnn/recurrent_problem.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/common/float_compute.h"
#include "ops/common/matmul_problem.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

enum InputIndex { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };

// An input of the node's dtype and the given shape as float32; `absent` (zeros) when
// the optional input is not given.
Expected<std::vector<float>> ReadOperand(const KernelContext& context, int index, const char* name, DType dtype,
                                         const Shape& shape, bool required) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) {
    if (required) return context.Error(ErrorCode::kInvalidModel, std::string(name) + " is required");
    return std::vector<float>(static_cast<size_t>(NumElements(shape)), 0.0f);
  }
  if (tensor->dtype() != dtype) {
    return context.Error(ErrorCode::kInvalidModel, std::string(name) + " is " + std::string(DTypeName(tensor->dtype())) +
                                                       ", X is " + std::string(DTypeName(dtype)));
  }
  if (tensor->shape() != shape) {
    return context.Error(ErrorCode::kInvalidModel, std::string(name) + " has shape " +
                                                       ShapeToString(tensor->shape()) + ", expected " +
                                                       ShapeToString(shape));
  }
  return ToFloat32(*tensor);
}

// [a, b, n] -> [b, a, n] (batch-major states and X to the time-major order used inside).
std::vector<float> SwapLeadingDims(const std::vector<float>& values, int64_t a, int64_t b, int64_t n) {
  std::vector<float> out(values.size());
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) std::copy_n(&values[(i * b + j) * n], n, &out[(j * a + i) * n]);
  }
  return out;
}

// c[m, n] = a[m, k] b^T where b is [n, k] row-major, in float32 through oneDNN.
Status ProductWithTransposed(const KernelContext& context, const float* a, const float* b, int64_t m, int64_t n,
                             int64_t k, float* c) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return Status::Ok();
  }
  MatMulProblem problem;
  problem.a_dims = {m, k};
  problem.a_strides = {k, 1};
  problem.b_dims = {k, n};
  problem.b_strides = {1, k};
  problem.c_dims = {m, n};
  const Status status = RunDnnlMatMul(problem, dnnl::memory::data_type::f32, a, b, c);
  if (!status.ok()) return context.Error(status.code(), status.message());
  return Status::Ok();
}

}  // namespace

const RnnActivation& RecurrentProblem::activation(int64_t d, size_t k) const {
  const size_t per_direction = activations.size() / static_cast<size_t>(directions);
  return activations[static_cast<size_t>(d) * per_direction + k];
}

int64_t RecurrentProblem::TimeAt(int64_t d, int64_t b, int64_t step) const {
  if (step >= lengths[b]) return -1;
  const bool backwards = reverse || d == 1;
  return backwards ? lengths[b] - 1 - step : step;
}

void RecurrentProblem::Clip(float* values, int64_t count) const {
  if (clip <= 0.0f) return;
  for (int64_t i = 0; i < count; ++i) values[i] = std::clamp(values[i], -clip, clip);
}

std::vector<float> RecurrentProblem::CombinedBias(int64_t d, const std::vector<bool>& keep_recurrent_bias_apart) const {
  const int64_t n = gates * hidden;
  const float* wb = &bias[d * 2 * n];
  const float* rb = wb + n;
  std::vector<float> combined(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) combined[i] = wb[i] + (keep_recurrent_bias_apart[i / hidden] ? 0.0f : rb[i]);
  return combined;
}

Expected<RecurrentProblem> ReadRecurrentProblem(const KernelContext& context, const RecurrentSpec& spec) {
  RecurrentProblem p;
  p.gates = spec.gates;
  const Tensor* x = context.input(kX);
  const Tensor* w = context.input(kW);
  const Tensor* r = context.input(kR);
  if (x == nullptr || w == nullptr || r == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "X, W and R are required");
  }
  p.dtype = x->dtype();
  if (p.dtype != DType::kFloat32 && !IsLowPrecision(p.dtype)) return context.UnsupportedDType(p.dtype);
  const int64_t layout = context.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return context.Error(ErrorCode::kInvalidModel, "layout must be 0 or 1");
  p.batch_major = layout == 1;
  const std::string direction = context.attr_string("direction", "forward");
  if (direction == "bidirectional") {
    p.directions = 2;
  } else if (direction == "reverse") {
    p.reverse = true;
  } else if (direction != "forward") {
    return context.Error(ErrorCode::kInvalidModel, "unknown direction '" + direction + "'");
  }
  if (x->rank() != 3 || w->rank() != 3 || r->rank() != 3) {
    return context.Error(ErrorCode::kInvalidModel, "X, W and R must have rank 3");
  }
  p.seq_length = x->dim(p.batch_major ? 1 : 0);
  p.batch = x->dim(p.batch_major ? 0 : 1);
  p.input_size = x->dim(2);
  p.hidden = context.attr_int("hidden_size", r->dim(2));
  if (p.hidden <= 0) return context.Error(ErrorCode::kInvalidModel, "hidden_size must be positive");
  const int64_t d = p.directions, s = p.seq_length, b = p.batch, h = p.hidden, n = p.gates * p.hidden;

  ONNX_AMP_ASSIGN_OR_RETURN(p.x, ReadOperand(context, kX, "X", p.dtype, x->shape(), true));
  if (p.batch_major) p.x = SwapLeadingDims(p.x, b, s, p.input_size);
  ONNX_AMP_ASSIGN_OR_RETURN(p.w, ReadOperand(context, kW, "W", p.dtype, {d, n, p.input_size}, true));
  ONNX_AMP_ASSIGN_OR_RETURN(p.r, ReadOperand(context, kR, "R", p.dtype, {d, n, h}, true));
  ONNX_AMP_ASSIGN_OR_RETURN(p.bias, ReadOperand(context, kB, "B", p.dtype, {d, 2 * n}, false));
  const Shape state_shape = p.batch_major ? Shape{b, d, h} : Shape{d, b, h};
  ONNX_AMP_ASSIGN_OR_RETURN(p.initial_h, ReadOperand(context, kInitialH, "initial_h", p.dtype, state_shape, false));
  if (p.batch_major) p.initial_h = SwapLeadingDims(p.initial_h, b, d, h);
  if (spec.has_cell) {
    ONNX_AMP_ASSIGN_OR_RETURN(p.initial_c, ReadOperand(context, kInitialC, "initial_c", p.dtype, state_shape, false));
    if (p.batch_major) p.initial_c = SwapLeadingDims(p.initial_c, b, d, h);
    ONNX_AMP_ASSIGN_OR_RETURN(p.peephole, ReadOperand(context, kP, "P", p.dtype, {d, 3 * h}, false));
  }

  p.lengths.assign(static_cast<size_t>(b), s);
  if (const Tensor* lens = context.input(kSequenceLens)) {
    if (lens->dtype() != DType::kInt32 || lens->shape() != Shape{b}) {
      return context.Error(ErrorCode::kInvalidModel, "sequence_lens must be int32 of shape [" + std::to_string(b) +
                                                         "], got " + std::string(DTypeName(lens->dtype())) + " " +
                                                         ShapeToString(lens->shape()));
    }
    for (int64_t i = 0; i < b; ++i) {
      const int64_t length = lens->data<int32_t>()[i];
      if (length < 0 || length > s) {
        return context.Error(ErrorCode::kInvalidModel, "sequence_lens[" + std::to_string(i) + "] = " +
                                                           std::to_string(length) + " is outside [0, " +
                                                           std::to_string(s) + "]");
      }
      p.lengths[i] = length;
    }
  }
  p.max_length = p.lengths.empty() ? 0 : *std::max_element(p.lengths.begin(), p.lengths.end());

  if (context.has_attribute("clip")) {
    p.clip = context.attr_float("clip", 0.0f);
    if (!(p.clip > 0.0f)) return context.Error(ErrorCode::kInvalidModel, "clip must be positive");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(p.activations, ReadRnnActivations(context, d, spec.default_activations));
  return p;
}

Expected<std::vector<float>> InputProjection(const KernelContext& context, const RecurrentProblem& p, int64_t d,
                                             const std::vector<float>& row_bias) {
  const int64_t rows = p.seq_length * p.batch, n = p.gates * p.hidden;
  std::vector<float> out(static_cast<size_t>(rows * n));
  ONNX_AMP_RETURN_IF_ERROR(
      ProductWithTransposed(context, p.x.data(), &p.w[d * n * p.input_size], rows, n, p.input_size, out.data()));
  for (int64_t row = 0; row < rows; ++row) {
    float* values = &out[row * n];
    for (int64_t i = 0; i < n; ++i) values[i] += row_bias[i];
  }
  return out;
}

Status RecurrentProduct(const KernelContext& context, const RecurrentProblem& p, int64_t d, int64_t first_row,
                        int64_t rows, const float* h, float* out) {
  const float* r = &p.r[(d * p.gates * p.hidden + first_row) * p.hidden];
  return ProductWithTransposed(context, h, r, p.batch, rows, p.hidden, out);
}

Status ForEachDirection(KernelContext& context, const RecurrentProblem& p,
                        const std::function<Status(int64_t)>& run_direction) {
  std::vector<Status> statuses(static_cast<size_t>(p.directions));
  context.threads().ParallelFor(p.directions, 1, [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d) statuses[d] = run_direction(d);
  });
  for (Status& status : statuses) ONNX_AMP_RETURN_IF_ERROR(status);
  return Status::Ok();
}

void StoreFinalState(const RecurrentProblem& p, int64_t d, const std::vector<float>& state, std::vector<float>& out) {
  const int64_t h = p.hidden;
  for (int64_t b = 0; b < p.batch; ++b) {
    float* dst = &out[(d * p.batch + b) * h];
    if (p.lengths[b] == 0) {
      std::fill(dst, dst + h, 0.0f);
    } else {
      std::copy_n(&state[b * h], h, dst);
    }
  }
}

Status WriteRecurrentOutputs(KernelContext& context, const RecurrentProblem& p, bool has_cell,
                             const RecurrentOutputs& outputs) {
  const int64_t s = p.seq_length, d = p.directions, b = p.batch, h = p.hidden;
  if (context.num_outputs() > 0 && context.output_used(0)) {
    const Shape shape = p.batch_major ? Shape{b, s, d, h} : Shape{s, d, b, h};
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, p.dtype, shape));
    std::vector<float> values(static_cast<size_t>(NumElements(shape)));
    for (int64_t di = 0; di < d; ++di) {
      for (int64_t t = 0; t < s; ++t) {
        for (int64_t bi = 0; bi < b; ++bi) {
          const int64_t dst = p.batch_major ? ((bi * s + t) * d + di) * h : ((t * d + di) * b + bi) * h;
          std::copy_n(&outputs.y[((di * s + t) * b + bi) * h], h, &values[dst]);
        }
      }
    }
    StoreFromFloat32(values.data(), *y);
  }
  for (int index = 1; index <= (has_cell ? 2 : 1); ++index) {
    if (context.num_outputs() <= index || !context.output_used(index)) continue;
    const std::vector<float>& state = index == 1 ? outputs.y_h : outputs.y_c;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, p.dtype, p.batch_major ? Shape{b, d, h} : Shape{d, b, h}));
    const std::vector<float> values = p.batch_major ? SwapLeadingDims(state, d, b, h) : state;
    StoreFromFloat32(values.data(), *out);
  }
  return Status::Ok();
}

}  // namespace onnx_amp
