// The redundancy rule both ends of a session follow for what they send every tick (the server's
// frames, a client's hashes): the newest items go out in every message, so a far peer's newest
// item never waits behind older ones still in flight. When the peer's acknowledgement has stood
// still for a round trip and more while newer items went out, an item right after it was lost in
// every copy: the range after the acknowledgement goes out once more, at most every interval.
#pragma once

#include <cstdint>

namespace lockstep {

class GapResend {
 public:
  static constexpr std::int64_t kIntervalNs = 100'000'000;

 private:
  std::int64_t last_send_ = 0;  // when the range after the acknowledgement last went out again

 public:
  /// Call only when newer items are going out past a gap after the acknowledgement. True (and
  /// the resend is counted as done at `now`) when the range after it should go out again:
  /// `ack_moved` is when the acknowledgement last advanced, `rtt_ns` the path's round trip.
  bool due(std::int64_t now, std::int64_t ack_moved, std::int64_t rtt_ns) {
    if (now - ack_moved <= rtt_ns + kIntervalNs || now - last_send_ <= kIntervalNs) return false;
    last_send_ = now;
    return true;
  }
};

}  // namespace lockstep
