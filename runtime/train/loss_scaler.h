// Dynamic loss scaling for float16 training (refs: PyTorch GradScaler, Keras
// LossScaleOptimizer, apex hysteresis). One iteration:
//   1. the loss is multiplied by scale() in float32 (never cast to float16);
//   2. backward produces scaled gradients;
//   3. Unscale() multiplies every gradient by 1/scale in place, exactly once, and
//      records whether any scaled value was inf/NaN (and the first such tensor); or the
//      update graph's UnscaleAndCheck does that, and the caller reports what it found
//      through MarkNonFinite() and MarkUnscaled();
//   4. the optimizer steps only if !found_inf() (a skipped step changes nothing);
//   5. Update() backs off on overflow or grows after growth_interval finite steps.
// Powers-of-two factors keep unscaling exact.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

// What happens when overflows keep coming.
enum class LossScaleFloorPolicy {
  kClamp,  // never go below min_scale; keep skipping (and stop after max_consecutive_skips)
  kRaise,  // an overflow at min_scale is an error
};

struct LossScalerConfig {
  bool enabled = true;             // off: scale 1, but the non-finite check still runs
  bool dynamic = true;             // false: a fixed scale (initial_scale) that never changes
  float initial_scale = 32768.0f;  // 2^15, as the Keras guide
  float growth_factor = 2.0f;      // > 1
  float backoff_factor = 0.5f;     // in (0, 1)
  int32_t growth_interval = 2000;  // finite steps in a row before growing
  int32_t hysteresis = 1;          // overflows tolerated before backing off (apex); 1 = none
  std::optional<float> min_scale;  // floor (none: may fall below 1, as PyTorch and Keras 3)
  std::optional<float> max_scale;  // ceiling (none: grows while finite)
  LossScaleFloorPolicy floor_policy = LossScaleFloorPolicy::kClamp;
  int32_t max_consecutive_skips = 0;  // 0: never stop; else Update() fails after that many skips in a row

  Status Validate() const;
};

// The scaler's persistent state, checkpointed after Update().
struct LossScalerState {
  float scale = 1.0f;
  int32_t growth_tracker = 0;
  int32_t hysteresis_tracker = 1;
  int64_t steps = 0;               // Update() calls
  int64_t skipped_steps = 0;
  int64_t consecutive_skips = 0;
};

// A gradient to unscale: a name (for the report) and its float32 elements.
struct GradientView {
  std::string_view name;
  std::span<float> values;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config);

  const LossScalerConfig& config() const { return config_; }
  const LossScalerState& state() const { return state_; }
  // Restores a checkpointed state (only between iterations).
  Status Restore(const LossScalerState& state);

  // The factor the loss is multiplied by this iteration (1 when disabled).
  float scale() const { return config_.enabled ? state_.scale : 1.0f; }

  // Unscales all gradients of this iteration in place and checks them. Calling it twice
  // in one iteration, or with no gradient at all, is an error.
  Status Unscale(std::span<const GradientView> gradients);
  // Records an inf/NaN found elsewhere (e.g. a non-finite loss) for this iteration.
  void MarkNonFinite(std::string_view where);
  // Records that the gradients were unscaled and checked outside (the update graph);
  // their first non-finite tensor goes to MarkNonFinite(). Twice in one iteration, or
  // after Unscale(), is an error.
  Status MarkUnscaled();

  bool found_inf() const { return found_inf_; }
  // The first tensor (in Unscale order) that held an inf/NaN this iteration.
  const std::string& first_non_finite() const { return first_non_finite_; }

  // Ends the iteration: backs off or grows the scale and counts the skip. Fails (kNumeric)
  // when the floor policy or max_consecutive_skips says the run must stop.
  Status Update();

 private:
  enum class Stage { kReady, kUnscaled };

  LossScalerConfig config_;
  LossScalerState state_;
  Stage stage_ = Stage::kReady;
  bool found_inf_ = false;
  std::string first_non_finite_;
};

}  // namespace onnx_amp
