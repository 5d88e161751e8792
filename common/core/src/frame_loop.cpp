#include "lockstep/frame_loop.hpp"

#include <algorithm>

namespace lockstep {

FramePass FrameLoop::pass(std::int64_t now_ns, std::size_t buffered, const std::function<bool()>& execute_one,
                          const std::function<std::int64_t()>& clock) {
  FramePass r;
  budget_.refill(now_ns);
  while (static_cast<std::size_t>(r.executed) < buffered) {
    if (!budget_.has_credit()) {
      r.over_budget = true;
      break;
    }
    const std::int64_t t0 = clock();
    if (!execute_one()) break;
    budget_.spend(clock() - t0);
    ++r.executed;
  }
  r.behind = buffered - static_cast<std::size_t>(r.executed);
  if (r.over_budget && (last_report_ns_ < 0 || now_ns - last_report_ns_ >= config_.report_every_ns)) {
    r.report = true;
    last_report_ns_ = now_ns;
  }
  // Drawing keeps its own schedule; a late frame moves it on rather than drawing a burst.
  if (next_draw_ns_ < 0) next_draw_ns_ = now_ns;
  if (now_ns >= next_draw_ns_) {
    r.draw = true;
    const std::int64_t period = config_.frame_period_ns;
    next_draw_ns_ += period;
    if (next_draw_ns_ <= now_ns) next_draw_ns_ = now_ns + period;  // late: resume the cadence from now
  }
  r.next_wake_ns = r.over_budget ? now_ns : next_draw_ns_;
  return r;
}

}  // namespace lockstep
