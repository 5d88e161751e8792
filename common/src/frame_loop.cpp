#include "lockstep/frame_loop.hpp"

#include <algorithm>

namespace lockstep {

FrameResult FrameLoop::frame(std::int64_t frame_ns, std::size_t buffered, const std::function<bool()>& execute_one) {
  FrameResult r;
  // Time sync: a buffer above target means we lag the server, so local time runs a little
  // faster; below target, a little slower. Bounded, so motion stays smooth.
  const double error = static_cast<double>(buffered) - config_.target_buffered;
  r.rate = 1.0 + std::clamp(error * config_.rate_gain, -config_.max_rate_change, config_.max_rate_change);
  const auto scaled = static_cast<std::int64_t>(static_cast<double>(frame_ns) * r.rate);
  const int due = timestep_.advance(scaled);
  while (r.executed < due && execute_one()) ++r.executed;
  if (r.executed < due) {
    timestep_.hold(due - r.executed);
    r.held = true;
  }
  r.alpha = timestep_.alpha();
  return r;
}

}  // namespace lockstep
