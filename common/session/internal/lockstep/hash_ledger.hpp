// The server's record of one peer's state hashes: which ticks have been compared, the
// acknowledgement sent back (every tick up to it compared), and when it last moved (for hash
// silence and the stalled-acknowledgement rule). Pure: no sockets, no clock.
#pragma once

#include <cstdint>
#include <vector>

#include "lockstep/input.hpp"

namespace lockstep {

class HashLedger {
 public:
  static constexpr std::size_t kHistory = 4096;  ///< ticks back a hash may still be compared

  /// What to do with a hash the peer reports for tick t.
  enum class Verdict { Compare, Already, Future, TooOld };

 private:
  std::vector<Tick> compared_ = std::vector<Tick>(kHistory);  // compared_[t % kHistory] == t: tick t is in
  Tick ack_ = 0;
  std::int64_t moved_at_ = 0;  // when ack_ last advanced (or the peer began to owe hashes); 0: not yet

 public:
  /// `executed`: the server's newest executed tick. Tick 0 is never reported.
  [[nodiscard]] Verdict check(Tick t, Tick executed) const {
    if (t == 0 || t <= ack_ || compared_[t % kHistory] == t) return Verdict::Already;
    if (t > executed) return Verdict::Future;
    if (executed - t >= kHistory) return Verdict::TooOld;
    return Verdict::Compare;
  }
  void mark(Tick t) { compared_[t % kHistory] = t; }
  /// Moves the acknowledgement over every compared tick after it (up to `executed`).
  void advance(Tick executed, std::int64_t now) {
    const Tick before = ack_;
    while (ack_ < executed && compared_[(ack_ + 1) % kHistory] == ack_ + 1) ++ack_;
    if (ack_ != before) moved_at_ = now;
  }
  /// Everything up to t counts as compared (a snapshot of tick t was sent).
  void reset_to(Tick t) { ack_ = t; }
  void set_moved_at(std::int64_t now) { moved_at_ = now; }

  [[nodiscard]] Tick ack() const { return ack_; }
  [[nodiscard]] std::int64_t moved_at() const { return moved_at_; }
};

}  // namespace lockstep
