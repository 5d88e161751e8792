// "Fix Your Timestep": the renderer produces time, the simulation consumes it in fixed steps.
// Integer nanoseconds throughout, so nothing drifts however many frames go by.
#pragma once

#include <cstdint>

#include "lockstep/input.hpp"

namespace lockstep {

struct TimestepConfig {
  std::int64_t dt_ns = kTickNs;             ///< one simulation step, nanoseconds
  std::int64_t max_frame_ns = 250'000'000;  ///< a longer frame is clamped to this (spiral-of-death guard)
  int max_steps_per_frame = 8;              ///< Unity's "maximum allowed timestep", in steps
};

/// The defaults: 100 Hz, 250 ms clamp, at most 8 steps a frame.
constexpr TimestepConfig default_timestep_config() { return {}; }

/// The accumulator. Pure: it is given each frame's elapsed time and never reads a clock.
class FixedTimestep {
 public:
  explicit FixedTimestep(TimestepConfig config = default_timestep_config()) : config_(config) {}

  /// Adds one frame's elapsed time (negative counts as 0; clamped to max_frame_ns) and returns
  /// the whole steps due now, at most max_steps_per_frame. Time beyond the cap stays in the
  /// accumulator (bounded by max_frame_ns), to be consumed by later frames.
  int advance(std::int64_t frame_ns) {
    if (frame_ns < 0) frame_ns = 0;
    if (frame_ns > config_.max_frame_ns) {
      clamped_ns_ += frame_ns - config_.max_frame_ns;
      frame_ns = config_.max_frame_ns;
    }
    accumulator_ns_ += frame_ns;
    if (accumulator_ns_ > config_.max_frame_ns) {
      clamped_ns_ += accumulator_ns_ - config_.max_frame_ns;
      accumulator_ns_ = config_.max_frame_ns;
    }
    std::int64_t steps = accumulator_ns_ / config_.dt_ns;
    if (steps > config_.max_steps_per_frame) steps = config_.max_steps_per_frame;
    accumulator_ns_ -= steps * config_.dt_ns;
    return static_cast<int>(steps);
  }

  /// Gives back `steps` of the last advance() that could not be taken (say, the next input frame
  /// has not arrived). The simulation holds at its last tick: the accumulator is left just under
  /// one step, so a hold never piles up time and the view rests on the newest state.
  void hold(int steps) {
    if (steps <= 0) return;
    accumulator_ns_ += static_cast<std::int64_t>(steps) * config_.dt_ns;
    if (accumulator_ns_ >= config_.dt_ns) {
      held_ns_ += accumulator_ns_ - (config_.dt_ns - 1);
      accumulator_ns_ = config_.dt_ns - 1;
    }
  }

  /// The fraction of a step left in the accumulator, in [0, 1): blend previous and current state by it.
  [[nodiscard]] double alpha() const {
    return static_cast<double>(accumulator_ns_) / static_cast<double>(config_.dt_ns);
  }
  [[nodiscard]] std::int64_t accumulator_ns() const { return accumulator_ns_; }
  /// Total frame time dropped by the clamp, nanoseconds.
  [[nodiscard]] std::int64_t clamped_ns() const { return clamped_ns_; }
  /// Total time dropped while holding, nanoseconds.
  [[nodiscard]] std::int64_t held_ns() const { return held_ns_; }
  [[nodiscard]] const TimestepConfig& config() const { return config_; }

 private:
  TimestepConfig config_;
  std::int64_t accumulator_ns_ = 0;
  std::int64_t clamped_ns_ = 0;
  std::int64_t held_ns_ = 0;
};

}  // namespace lockstep
