// LSTM (gates i, o, f, c in W, R and B; peepholes P as i, o, f; f Sigmoid, g and h
// Tanh by default):
//   i = f(X Wi^T + H Ri^T + Pi . C + Wbi + Rbi)
//   f = f(X Wf^T + H Rf^T + Pf . C + Wbf + Rbf)   (1 - i with input_forget)
//   c = g(X Wc^T + H Rc^T + Wbc + Rbc)
//   C' = f . C + i . c
//   o = f(X Wo^T + H Ro^T + Po . C' + Wbo + Rbo)
//   H' = o . h(C')
// Within a step C' stays float32 (o and h(C') read it from registers on a GPU); it is
// rounded when stored for the next step and for Y_c.
#include <algorithm>

#include "ops/common/float32_buffers.h"
#include "ops/rnn/recurrent_problem.h"
#include "ops/rnn/rnn_kernels.h"

namespace onnx_amp {
namespace {

Status RunLstmDirection(const KernelContext& context, const RecurrentProblem& p, bool input_forget, int64_t d,
                        RecurrentOutputs& out) {
  const int64_t batch = p.batch, h = p.hidden, n = 4 * h;
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<float> xw,
                            InputProjection(context, p, d, p.CombinedBias(d, {false, false, false, false})));
  std::vector<float> state(p.initial_h.begin() + d * batch * h, p.initial_h.begin() + (d + 1) * batch * h);
  std::vector<float> cell(p.initial_c.begin() + d * batch * h, p.initial_c.begin() + (d + 1) * batch * h);
  std::vector<float> hr(static_cast<size_t>(batch * n)), new_cell(static_cast<size_t>(h));
  const float* p_i = &p.peephole[d * 3 * h];
  const float* p_o = p_i + h;
  const float* p_f = p_i + 2 * h;
  const RnnActivation& f = p.activation(d, 0);
  const RnnActivation& g = p.activation(d, 1);
  const RnnActivation& act_h = p.activation(d, 2);
  for (int64_t step = 0; step < p.max_length; ++step) {
    ONNX_AMP_RETURN_IF_ERROR(RecurrentProduct(context, p, d, 0, n, state.data(), hr.data()));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t t = p.TimeAt(d, b, step);
      if (t < 0) continue;
      float* gates = &hr[b * n];
      const float* x_part = &xw[(t * batch + b) * n];
      for (int64_t i = 0; i < n; ++i) gates[i] += x_part[i];
      float* in = gates;
      float* output = gates + h;
      float* forget = gates + 2 * h;
      float* candidate = gates + 3 * h;
      float* c = &cell[b * h];
      for (int64_t i = 0; i < h; ++i) {
        in[i] += p_i[i] * c[i];
        forget[i] += p_f[i] * c[i];
      }
      p.Clip(in, h);
      p.Clip(forget, 2 * h);  // forget and candidate
      f.ApplyInPlace(in, h);
      if (input_forget) {
        for (int64_t i = 0; i < h; ++i) forget[i] = 1.0f - in[i];
      } else {
        f.ApplyInPlace(forget, h);
      }
      g.ApplyInPlace(candidate, h);
      for (int64_t i = 0; i < h; ++i) new_cell[i] = forget[i] * c[i] + in[i] * candidate[i];
      // The output gate's peephole reads the new cell, so it is clipped only now.
      for (int64_t i = 0; i < h; ++i) output[i] += p_o[i] * new_cell[i];
      p.Clip(output, h);
      f.ApplyInPlace(output, h);
      std::copy_n(new_cell.data(), h, c);
      act_h.ApplyInPlace(new_cell.data(), h);
      float* next = &state[b * h];
      for (int64_t i = 0; i < h; ++i) next[i] = output[i] * new_cell[i];
      RoundThrough(p.dtype, next, next, h);
      RoundThrough(p.dtype, c, c, h);
      std::copy_n(next, h, &out.y[((d * p.seq_length + t) * batch + b) * h]);
    }
  }
  StoreFinalState(p, d, state, out.y_h);
  StoreFinalState(p, d, cell, out.y_c);
  return Status::Ok();
}

}  // namespace

Status LstmCpu(KernelContext& context) {
  const RecurrentSpec spec{4, true, {RnnActivationKind::kSigmoid, RnnActivationKind::kTanh, RnnActivationKind::kTanh}};
  ONNX_AMP_ASSIGN_OR_RETURN(const RecurrentProblem p, ReadRecurrentProblem(context, spec));
  const bool input_forget = context.attr_int("input_forget", 0) != 0;
  RecurrentOutputs out;
  out.y.assign(static_cast<size_t>(p.directions * p.seq_length * p.batch * p.hidden), 0.0f);
  out.y_h.assign(static_cast<size_t>(p.directions * p.batch * p.hidden), 0.0f);
  out.y_c.assign(out.y_h.size(), 0.0f);
  ONNX_AMP_RETURN_IF_ERROR(
      ForEachDirection(context, p, [&](int64_t d) { return RunLstmDirection(context, p, input_forget, d, out); }));
  return WriteRecurrentOutputs(context, p, spec.has_cell, out);
}

}  // namespace onnx_amp
