// The client's loop policy, one pass per wake (see timestep.hpp for the design): step every
// confirmed frame that has arrived while the step budget lasts, say when stepping cannot keep
// up, and decide when to draw. Pure: the time and a clock for the cost of a step are passed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "lockstep/timestep.hpp"

namespace lockstep {

struct FrameLoopConfig {
  TimestepConfig timestep;                      ///< dt and the step budget
  std::int64_t frame_period_ns = 0;             ///< time between drawn frames; 0 = draw on every pass
  std::int64_t report_every_ns = 5'000'000'000; ///< at most one "cannot keep up" report this often
};

struct FramePass {
  int executed = 0;               ///< frames stepped in this pass
  std::size_t behind = 0;         ///< frames that had arrived and are still waiting (over budget)
  bool over_budget = false;       ///< stepping stopped because its time was spent
  bool report = false;            ///< over budget and no report for report_every_ns: say so now
  bool draw = false;              ///< a frame is due: draw it
  std::int64_t next_wake_ns = 0;  ///< when this loop next has work of its own (now while behind)
};

class FrameLoop {
 public:
  explicit FrameLoop(FrameLoopConfig config = {}) : config_(config), budget_(config.timestep) {}

  /// One pass at `now_ns`: `buffered` frames have arrived; `execute_one` steps the next one
  /// (false when it could not); `clock` returns monotonic nanoseconds to time each step.
  FramePass pass(std::int64_t now_ns, std::size_t buffered, const std::function<bool()>& execute_one,
                 const std::function<std::int64_t()>& clock);

  [[nodiscard]] const StepBudget& budget() const { return budget_; }

 private:
  FrameLoopConfig config_;
  StepBudget budget_;
  std::int64_t next_draw_ns_ = -1;
  std::int64_t last_report_ns_ = -1;
};

}  // namespace lockstep
