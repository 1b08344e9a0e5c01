#include "runtime/train/loss_scaler.h"

#include <cfloat>
#include <cmath>

#include "ops/training/gradient_math.h"

namespace onnx_amp {

Status LossScalerConfig::Validate() const {
  if (!(initial_scale > 0.0f) || !std::isfinite(initial_scale)) {
    return InvalidArgument("loss scale must be a positive finite number, got " + std::to_string(initial_scale));
  }
  if (!(growth_factor > 1.0f)) return InvalidArgument("loss-scale growth factor must be > 1");
  if (!(backoff_factor > 0.0f && backoff_factor < 1.0f)) {
    return InvalidArgument("loss-scale backoff factor must be in (0, 1)");
  }
  if (growth_interval < 1) return InvalidArgument("loss-scale growth interval must be >= 1");
  if (hysteresis < 1) return InvalidArgument("loss-scale hysteresis must be >= 1");
  if (min_scale && !(*min_scale > 0.0f)) return InvalidArgument("minimum loss scale must be > 0");
  if (min_scale && max_scale && *min_scale > *max_scale) {
    return InvalidArgument("minimum loss scale exceeds the maximum");
  }
  if (max_consecutive_skips < 0) return InvalidArgument("max consecutive skipped steps must be >= 0");
  return Status::Ok();
}

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  state_.scale = config.enabled ? config.initial_scale : 1.0f;
  state_.hysteresis_tracker = config.hysteresis;
}

Status LossScaler::Restore(const LossScalerState& state) {
  if (stage_ != Stage::kReady) return InvalidArgument("loss scaler state restored in the middle of an iteration");
  if (!(state.scale > 0.0f) || !std::isfinite(state.scale)) {
    return InvalidArgument("checkpointed loss scale is not a positive finite number");
  }
  state_ = state;
  return Status::Ok();
}

Status LossScaler::Unscale(std::span<const GradientView> gradients) {
  if (gradients.empty()) return InvalidArgument("no gradients to unscale (no inf checks were recorded)");
  ONNX_AMP_RETURN_IF_ERROR(MarkUnscaled());
  const float inv = InverseLossScale(scale());
  for (const GradientView& gradient : gradients) {
    uint32_t flags = 0;
    float* values = gradient.values.data();
    const size_t count = gradient.values.size();
    if (inv == 1.0f) {
      for (size_t i = 0; i < count; ++i) flags |= NonFiniteBit(values[i]);
    } else {
      for (size_t i = 0; i < count; ++i) {
        flags |= NonFiniteBit(values[i]);  // tested on the scaled value
        values[i] *= inv;
      }
    }
    if (AnyNonFinite(flags)) MarkNonFinite(gradient.name);
  }
  return Status::Ok();
}

Status LossScaler::MarkUnscaled() {
  if (stage_ == Stage::kUnscaled) return InvalidArgument("gradients were already unscaled in this iteration");
  stage_ = Stage::kUnscaled;
  return Status::Ok();
}

void LossScaler::MarkNonFinite(std::string_view where) {
  if (!found_inf_) first_non_finite_ = std::string(where);
  found_inf_ = true;
}

Status LossScaler::Update() {
  // A recorded overflow (e.g. a non-finite loss) ends the iteration without unscaling.
  if (stage_ != Stage::kUnscaled && !found_inf_) {
    return InvalidArgument("loss scaler updated before the gradients were unscaled");
  }
  const bool overflow = found_inf_;
  stage_ = Stage::kReady;
  found_inf_ = false;

  ++state_.steps;
  if (overflow) {
    ++state_.skipped_steps;
    ++state_.consecutive_skips;
  } else {
    state_.consecutive_skips = 0;
    first_non_finite_.clear();
  }

  if (config_.enabled && config_.dynamic) {
    bool back_off = overflow;
    if (overflow && config_.hysteresis > 1) {
      --state_.hysteresis_tracker;
      if (state_.hysteresis_tracker > 0) back_off = false;
      state_.growth_tracker = 0;
    }
    if (back_off) {
      const float floor = config_.min_scale.value_or(FLT_MIN);  // never 0 or subnormal
      if (config_.floor_policy == LossScaleFloorPolicy::kRaise && state_.scale <= floor) {
        return NumericError("loss scale is already at its minimum (" + std::to_string(floor) +
                            ") and gradients still overflow; first non-finite tensor: " + first_non_finite_);
      }
      state_.scale = std::max(state_.scale * config_.backoff_factor, floor);
      state_.growth_tracker = 0;
    } else if (!overflow) {
      const int32_t tracker = state_.growth_tracker + 1;
      if (tracker == config_.growth_interval) {
        const float grown = state_.scale * config_.growth_factor;
        if (std::isfinite(grown)) {
          state_.scale = config_.max_scale ? std::min(grown, *config_.max_scale) : grown;
        }
        state_.growth_tracker = 0;
      } else {
        state_.growth_tracker = tracker;
      }
      state_.hysteresis_tracker = config_.hysteresis;
    }
  }

  if (config_.max_consecutive_skips > 0 && state_.consecutive_skips >= config_.max_consecutive_skips) {
    return NumericError(std::to_string(state_.consecutive_skips) +
                        " optimizer steps in a row were skipped because gradients held inf/NaN (loss scale now " +
                        std::to_string(state_.scale) + "); first non-finite tensor: " + first_non_finite_);
  }
  return Status::Ok();
}

}  // namespace onnx_amp
