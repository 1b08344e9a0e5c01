// What RNN, GRU and LSTM share: reading and checking the inputs (X, W, R and the
// optional B, sequence_lens, initial_h, plus initial_c and P for LSTM; ONNX opset
// 7..22 with the `layout` attribute of opset 14), the input projection X W^T of all
// timesteps as one GEMM per direction, the per-step recurrent product H R^T, and
// writing Y / Y_h / Y_c in the node's layout.
//
// Numerics: float16/bfloat16 inputs are widened to float32 (exactly), products
// accumulate in float32 and gate math is float32. The carried state (H, and C for
// LSTM) is rounded to the output dtype when a step stores it, as a GPU kernel that
// writes Y every step and reads it back at the next one: so each output element is
// rounded once, Y_h is bit-identical to the last Y row, and float32 is unaffected.
//
// sequence_lens: batch entry b runs its first len[b] timesteps (the reverse direction
// starts at len[b] - 1); Y is zero past len[b], and an entry of length 0 has zero
// Y_h / Y_c, as ONNX Runtime gives.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ops/rnn/rnn_activation.h"
#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// What an op tells the shared part about itself.
struct RecurrentSpec {
  int64_t gates = 1;        // RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  bool has_cell = false;    // LSTM: initial_c, P and Y_c
  std::vector<RnnActivationKind> default_activations;  // per direction
};

struct RecurrentProblem {
  DType dtype = DType::kFloat32;
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0, directions = 1, gates = 1;
  bool batch_major = false;  // layout 1: X, Y, initial and final states lead with batch
  bool reverse = false;      // direction "reverse" (a single backward direction)
  std::vector<float> x;                      // [seq, batch, input], time-major in any layout
  std::vector<float> w, r;                   // [directions, gates * hidden, input or hidden]
  std::vector<float> bias;                   // [directions, 2 * gates * hidden]: Wb then Rb; zeros when absent
  std::vector<float> initial_h, initial_c;   // [directions, batch, hidden]; zeros when absent
  std::vector<float> peephole;               // [directions, 3 * hidden] (i o f); zeros when absent
  std::vector<int64_t> lengths;              // per batch entry
  int64_t max_length = 0;
  std::vector<RnnActivation> activations;    // per direction, forward first
  float clip = 0.0f;                         // 0: no clipping

  // Activation k of direction d.
  const RnnActivation& activation(int64_t d, size_t k) const;
  // The timestep that batch entry b processes at step `step` of direction d; -1 when
  // its sequence is over.
  int64_t TimeAt(int64_t d, int64_t b, int64_t step) const;
  // Clamps gate pre-activations to [-clip, clip] when the node sets clip.
  void Clip(float* values, int64_t count) const;
  // Gate bias row of direction d: Wb + Rb for each gate, except the gates in
  // `keep_recurrent_bias_apart` that get Wb only (GRU's h gate with linear_before_reset).
  std::vector<float> CombinedBias(int64_t d, const std::vector<bool>& keep_recurrent_bias_apart) const;
};

// The outputs as float32 values, already rounded to the output dtype.
struct RecurrentOutputs {
  std::vector<float> y;         // [directions, seq, batch, hidden]; zeros past each length
  std::vector<float> y_h, y_c;  // [directions, batch, hidden]
};

Expected<RecurrentProblem> ReadRecurrentProblem(const KernelContext& context, const RecurrentSpec& spec);

// [seq * batch, gates * hidden] = X W_d^T + row_bias (gates * hidden values per row).
Expected<std::vector<float>> InputProjection(const KernelContext& context, const RecurrentProblem& p, int64_t d,
                                             const std::vector<float>& row_bias);

// out[batch, rows] = h[batch, hidden] R_d[first_row : first_row + rows]^T.
Status RecurrentProduct(const KernelContext& context, const RecurrentProblem& p, int64_t d, int64_t first_row,
                        int64_t rows, const float* h, float* out);

// Runs run_direction(d) for every direction, the two of a bidirectional node in
// parallel; returns the first error.
Status ForEachDirection(KernelContext& context, const RecurrentProblem& p,
                        const std::function<Status(int64_t)>& run_direction);

// Sets the final state of direction d: `state` for entries that ran, zeros for
// entries of length 0.
void StoreFinalState(const RecurrentProblem& p, int64_t d, const std::vector<float>& state, std::vector<float>& out);

// Allocates the used outputs (0 Y, 1 Y_h, and 2 Y_c when has_cell) and writes them
// in the node's layout.
Status WriteRecurrentOutputs(KernelContext& context, const RecurrentProblem& p, bool has_cell,
                             const RecurrentOutputs& outputs);

}  // namespace onnx_amp
