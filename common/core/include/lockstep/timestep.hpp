// "Fix Your Timestep" in a networked session: who produces time, who consumes it, and the guard
// against the spiral of death.
//
// Alone, a game's renderer produces time and the simulation consumes it in fixed dt steps from
// an accumulator, and a frame's time is clamped so that a hitch never asks for more steps than
// the machine can run. In a lockstep session the producer is the server's tick clock instead:
// a confirmed input frame exists only once the server has reached that tick, so every frame
// that has arrived is due, and a client must execute all of them, whatever its frame rate, or it
// falls behind for good. The renderer only reads: it draws the previous and the current state
// blended by alpha = (time past the current tick's due time on the tick clock) / dt, which is
// the accumulator's remainder of the seeds.
//
// Design: one thread. The client's loop wakes for its socket, for each tick's input sample and
// for each frame it draws; on every wake it steps the frames that have arrived, so stepping
// follows the session's pace and drawing never delays it. What a frame rate may not do is cap
// the steps; what the machine may do is run steps slower than real time, and then stepping
// would eat the loop. So the guard is a budget of time, not a count of steps: stepping may use
// no more time than has really passed (banked up to max_credit_ns), a client over it stops
// stepping until the next wake (the socket, sampling and drawing run in between) and says
// `cannot keep up: stepping takes N ms per 10 ms tick`, and it keeps trying. A step that costs
// more than a tick therefore slows that one client, never into a spiral, and never the session.
// Pure: the time is passed in; nothing here reads a clock.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lockstep/input.hpp"

namespace lockstep {

struct TimestepConfig {
  std::int64_t dt_ns = kTickNs;              ///< one simulation step, nanoseconds
  std::int64_t max_credit_ns = 250'000'000;  ///< stepping time that may be banked (the seeds' 250 ms clamp)
};

/// The defaults: 100 Hz, at most 250 ms of stepping banked.
constexpr TimestepConfig default_timestep_config() { return {}; }

/// The spiral-of-death guard: stepping may spend the real time that has passed, no more.
class StepBudget {
 public:
  explicit StepBudget(TimestepConfig config = default_timestep_config()) : config_(config) {}

  /// Banks the real time passed since the last refill (the first call banks one dt).
  void refill(std::int64_t now_ns) {
    const std::int64_t passed = last_ns_ < 0 ? config_.dt_ns : std::max<std::int64_t>(0, now_ns - last_ns_);
    last_ns_ = now_ns;
    credit_ns_ = std::min(credit_ns_ + passed, config_.max_credit_ns);
  }
  /// True while stepping has time left: a step may start (it may then overdraw by its own cost).
  [[nodiscard]] bool has_credit() const { return credit_ns_ > 0; }
  /// Charges one step that took `step_ns`, and keeps a running mean of the cost of a step.
  void spend(std::int64_t step_ns) {
    step_ns = std::max<std::int64_t>(0, step_ns);
    credit_ns_ -= step_ns;
    mean_step_ns_ = mean_step_ns_ == 0 ? step_ns : mean_step_ns_ + (step_ns - mean_step_ns_) / 16;
  }
  /// Credit left (negative after an overdraw), nanoseconds.
  [[nodiscard]] std::int64_t credit_ns() const { return credit_ns_; }
  /// Running mean of one step's cost, nanoseconds.
  [[nodiscard]] std::int64_t mean_step_ns() const { return mean_step_ns_; }
  [[nodiscard]] const TimestepConfig& config() const { return config_; }

 private:
  TimestepConfig config_;
  std::int64_t last_ns_ = -1;
  std::int64_t credit_ns_ = 0;
  std::int64_t mean_step_ns_ = 0;
};

/// The blend factor for drawing: how far the tick clock has run past `current_due_ns` (when
/// the current tick fell due), in steps, kept in [0, 1): at 1 the view rests on the current state.
inline double view_alpha(std::int64_t now_ns, std::int64_t current_due_ns, std::int64_t dt_ns = kTickNs) {
  const double a = static_cast<double>(now_ns - current_due_ns) / static_cast<double>(dt_ns);
  return std::clamp(a, 0.0, 1.0 - 1.0 / 1024.0);
}

}  // namespace lockstep
