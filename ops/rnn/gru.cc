// GRU (gates z, r, h in W, R and B; f Sigmoid and g Tanh by default):
//   z = f(X Wz^T + H Rz^T + Wbz + Rbz),  r = f(X Wr^T + H Rr^T + Wbr + Rbr)
//   linear_before_reset 0: h~ = g(X Wh^T + (r . H) Rh^T + Rbh + Wbh)
//   linear_before_reset 1: h~ = g(X Wh^T + r . (H Rh^T + Rbh) + Wbh)
//   H' = (1 - z) . h~ + z . H
#include <algorithm>

#include "ops/common/float32_buffers.h"
#include "ops/rnn/recurrent_problem.h"
#include "ops/rnn/rnn_kernels.h"

namespace onnx_amp {
namespace {

Status RunGruDirection(const KernelContext& context, const RecurrentProblem& p, bool linear_before_reset, int64_t d,
                       RecurrentOutputs& out) {
  const int64_t batch = p.batch, h = p.hidden, n = 3 * h;
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<float> xw,
                            InputProjection(context, p, d, p.CombinedBias(d, {false, false, linear_before_reset})));
  const float* rbh = &p.bias[d * 2 * n + n + 2 * h];
  std::vector<float> state(p.initial_h.begin() + d * batch * h, p.initial_h.begin() + (d + 1) * batch * h);
  // hr: H R^T for all gates (linear_before_reset) or for z and r only; then the h
  // gate's recurrent part in hh, from (r . H) when the reset comes first.
  const int64_t hr_cols = linear_before_reset ? n : 2 * h;
  std::vector<float> hr(static_cast<size_t>(batch * hr_cols)), reset_state(static_cast<size_t>(batch * h), 0.0f),
      hh(static_cast<size_t>(batch * h));
  const RnnActivation& f = p.activation(d, 0);
  const RnnActivation& g = p.activation(d, 1);
  for (int64_t step = 0; step < p.max_length; ++step) {
    ONNX_AMP_RETURN_IF_ERROR(RecurrentProduct(context, p, d, 0, hr_cols, state.data(), hr.data()));
    // z and r in place in hr.
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t t = p.TimeAt(d, b, step);
      if (t < 0) continue;
      float* zr = &hr[b * hr_cols];
      const float* x_part = &xw[(t * batch + b) * n];
      for (int64_t i = 0; i < 2 * h; ++i) zr[i] += x_part[i];
      p.Clip(zr, 2 * h);
      f.ApplyInPlace(zr, 2 * h);
      if (linear_before_reset) {
        for (int64_t i = 0; i < h; ++i) hh[b * h + i] = zr[h + i] * (zr[2 * h + i] + rbh[i]);
      } else {
        for (int64_t i = 0; i < h; ++i) reset_state[b * h + i] = zr[h + i] * state[b * h + i];
      }
    }
    if (!linear_before_reset) {
      ONNX_AMP_RETURN_IF_ERROR(RecurrentProduct(context, p, d, 2 * h, h, reset_state.data(), hh.data()));
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t t = p.TimeAt(d, b, step);
      if (t < 0) continue;
      const float* z = &hr[b * hr_cols];
      float* candidate = &hh[b * h];
      const float* x_part = &xw[(t * batch + b) * n + 2 * h];
      for (int64_t i = 0; i < h; ++i) candidate[i] += x_part[i];
      p.Clip(candidate, h);
      g.ApplyInPlace(candidate, h);
      float* next = &state[b * h];
      for (int64_t i = 0; i < h; ++i) next[i] = (1.0f - z[i]) * candidate[i] + z[i] * next[i];
      RoundThrough(p.dtype, next, next, h);
      std::copy_n(next, h, &out.y[((d * p.seq_length + t) * batch + b) * h]);
    }
  }
  StoreFinalState(p, d, state, out.y_h);
  return Status::Ok();
}

}  // namespace

Status GruCpu(KernelContext& context) {
  const RecurrentSpec spec{3, false, {RnnActivationKind::kSigmoid, RnnActivationKind::kTanh}};
  ONNX_AMP_ASSIGN_OR_RETURN(const RecurrentProblem p, ReadRecurrentProblem(context, spec));
  const bool linear_before_reset = context.attr_int("linear_before_reset", 0) != 0;
  RecurrentOutputs out;
  out.y.assign(static_cast<size_t>(p.directions * p.seq_length * p.batch * p.hidden), 0.0f);
  out.y_h.assign(static_cast<size_t>(p.directions * p.batch * p.hidden), 0.0f);
  ONNX_AMP_RETURN_IF_ERROR(ForEachDirection(
      context, p, [&](int64_t d) { return RunGruDirection(context, p, linear_before_reset, d, out); }));
  return WriteRecurrentOutputs(context, p, spec.has_cell, out);
}

}  // namespace onnx_amp
