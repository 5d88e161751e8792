// A client's copy of the server's tick clock: tick T falls due here at origin + (T + shift)
// periods, where origin (tick 0's deadline as seen here) is the minimum over recent arrivals of
// (arrival - (tick + shift) periods): the least-delayed arrival is the best estimate. The server
// reports its shift, the ticks it has moved its clock later after falling behind.
// Pure: arrival times are passed in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>

#include "lockstep/input.hpp"

namespace lockstep {

class TickClock {
 public:
  static constexpr std::size_t kWindow = 128;  ///< arrivals the estimate looks back over

 private:
  bool known_ = false;
  std::deque<std::int64_t> samples_;
  std::int64_t origin_ = 0;
  std::uint32_t shift_ = 0;

 public:
  /// The first Start: `estimate` is now + the time to tick 0 it announced.
  void start(std::int64_t estimate) {
    known_ = true;
    origin_ = estimate;
    samples_.push_back(estimate);
  }
  /// A later copy of Start that arrived earlier than the estimate so far.
  void earlier_start(std::int64_t estimate) {
    if (!known_ || estimate >= origin_) return;
    add(estimate);
    origin_ = estimate;
  }
  /// Frames up to `last` arrived at `now`, sent when the server's clock had shifted by `shift`.
  void frames_arrived(std::int64_t now, Tick last, std::uint32_t shift) {
    add(now - (std::int64_t{last} + std::int64_t{shift}) * kTickNs);
    origin_ = *std::min_element(samples_.begin(), samples_.end());
  }
  /// The server's shift so far (a reordered datagram carries an older, smaller one).
  void shifted(std::uint32_t shift) { shift_ = std::max(shift_, shift); }

  [[nodiscard]] bool known() const { return known_; }
  [[nodiscard]] std::int64_t origin() const { return origin_; }
  [[nodiscard]] std::uint32_t shift() const { return shift_; }
  /// When the server's deadline for tick t falls, by this clock.
  [[nodiscard]] std::int64_t due_at(Tick t) const { return origin_ + (std::int64_t{t} + std::int64_t{shift_}) * kTickNs; }

 private:
  void add(std::int64_t sample) {
    samples_.push_back(sample);
    if (samples_.size() > kWindow) samples_.pop_front();
  }
};

}  // namespace lockstep
