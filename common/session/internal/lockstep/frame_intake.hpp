// A client's confirmed frames, by tick, from their arrival (in any order, any number of copies)
// to their execution strictly in order. Pure: no sockets, no clock.
#pragma once

#include <array>
#include <cstdint>

#include "lockstep/input.hpp"

namespace lockstep {

class FrameIntake {
 public:
  static constexpr std::size_t kRing = 256;  ///< frames buffered ahead of the executed tick, at most

 private:
  std::array<InputFrame, kRing> frames_{};
  std::array<bool, kRing> have_{};
  Tick received_ = 0;  // every frame up to here is in

 public:
  /// Takes frame f; `executed` is the newest executed tick. False when it is already in or
  /// beyond the buffer.
  bool add(const InputFrame& f, Tick executed) {
    const Tick t = f.tick;
    if (!wants(t, executed)) return false;
    frames_[t % kRing] = f;
    have_[t % kRing] = true;
    while (have_[(received_ + 1) % kRing] && frames_[(received_ + 1) % kRing].tick == received_ + 1) ++received_;
    return true;
  }
  /// Whether frame t is still missing and fits the buffer (`executed`: the newest executed tick).
  [[nodiscard]] bool wants(Tick t, Tick executed) const { return t > received_ && t <= executed + kRing - 1; }
  /// Frame t, received and not yet released.
  [[nodiscard]] const InputFrame& at(Tick t) const { return frames_[t % kRing]; }
  /// Frame t has been executed: its place is free for tick t + kRing.
  void release(Tick t) { have_[t % kRing] = false; }
  /// Frame t (already received and released) is to be executed again (after a resync).
  void keep(Tick t) { have_[t % kRing] = true; }
  /// Starts over at tick t (a snapshot of tick t): frames up to it are in.
  void reset(Tick t) {
    have_.fill(false);
    received_ = t;
  }
  [[nodiscard]] Tick received() const { return received_; }
};

}  // namespace lockstep
