// RNN: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), f Tanh by default.
#include <algorithm>

#include "ops/common/float32_buffers.h"
#include "ops/rnn/recurrent_problem.h"
#include "ops/rnn/rnn_kernels.h"

namespace onnx_amp {
namespace {

Status RunRnnDirection(const KernelContext& context, const RecurrentProblem& p, int64_t d, RecurrentOutputs& out) {
  const int64_t batch = p.batch, h = p.hidden;
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<float> xw, InputProjection(context, p, d, p.CombinedBias(d, {false})));
  std::vector<float> state(p.initial_h.begin() + d * batch * h, p.initial_h.begin() + (d + 1) * batch * h);
  std::vector<float> hr(static_cast<size_t>(batch * h));
  const RnnActivation& f = p.activation(d, 0);
  for (int64_t step = 0; step < p.max_length; ++step) {
    ONNX_AMP_RETURN_IF_ERROR(RecurrentProduct(context, p, d, 0, h, state.data(), hr.data()));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t t = p.TimeAt(d, b, step);
      if (t < 0) continue;
      float* gate = &hr[b * h];
      const float* x_part = &xw[(t * batch + b) * h];
      for (int64_t i = 0; i < h; ++i) gate[i] += x_part[i];
      p.Clip(gate, h);
      f.ApplyInPlace(gate, h);
      RoundThrough(p.dtype, gate, gate, h);
      std::copy_n(gate, h, &state[b * h]);
      std::copy_n(gate, h, &out.y[((d * p.seq_length + t) * batch + b) * h]);
    }
  }
  StoreFinalState(p, d, state, out.y_h);
  return Status::Ok();
}

}  // namespace

Status RnnCpu(KernelContext& context) {
  const RecurrentSpec spec{1, false, {RnnActivationKind::kTanh}};
  ONNX_AMP_ASSIGN_OR_RETURN(const RecurrentProblem p, ReadRecurrentProblem(context, spec));
  RecurrentOutputs out;
  out.y.assign(static_cast<size_t>(p.directions * p.seq_length * p.batch * p.hidden), 0.0f);
  out.y_h.assign(static_cast<size_t>(p.directions * p.batch * p.hidden), 0.0f);
  ONNX_AMP_RETURN_IF_ERROR(
      ForEachDirection(context, p, [&](int64_t d) { return RunRnnDirection(context, p, d, out); }));
  return WriteRecurrentOutputs(context, p, spec.has_cell, out);
}

}  // namespace onnx_amp
