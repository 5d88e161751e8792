// The client's render-side frame loop ("Fix Your Timestep", final form): each rendered frame
// adds its real elapsed time to a FixedTimestep, executes as many confirmed input frames as
// whole steps allow (capped), and reports alpha for blending the previous and current state.
// It also keeps a small, steady lead of received-but-unexecuted frames by stretching or
// shrinking local time a little, so the view never lurches. Pure: no clock, no socket.
#pragma once

#include <cstdint>
#include <functional>

#include "lockstep/timestep.hpp"

namespace lockstep {

struct FrameLoopConfig {
  TimestepConfig timestep;        ///< dt, clamp and steps-per-frame cap
  double target_buffered = 2.0;   ///< frames to keep received but not yet executed
  double max_rate_change = 0.05;  ///< local time runs at most this much faster or slower (0.05 = 5 %)
  double rate_gain = 0.02;        ///< rate change per frame of buffer error
};

struct FrameResult {
  int executed = 0;    ///< frames executed this rendered frame
  bool held = false;   ///< a step was due but no frame had arrived: the view holds
  double alpha = 0.0;  ///< blend factor in [0, 1): previous state to current
  double rate = 1.0;   ///< local time rate used for this frame
};

class FrameLoop {
 public:
  explicit FrameLoop(FrameLoopConfig config = {}) : config_(config), timestep_(config.timestep) {}

  /// One rendered frame: `frame_ns` of real time passed, `buffered` frames are ready, and
  /// `execute_one` runs the next one (returning false if it could not).
  FrameResult frame(std::int64_t frame_ns, std::size_t buffered, const std::function<bool()>& execute_one);

  [[nodiscard]] const FixedTimestep& timestep() const { return timestep_; }

 private:
  FrameLoopConfig config_;
  FixedTimestep timestep_;
};

}  // namespace lockstep
