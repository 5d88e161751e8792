// The loss a session sees on one direction of a link: play messages are due at fixed ticks (one
// every `every` ticks, named by the newest tick each carries), so the receiver counts the ones that
// never came. ENet's own estimate counts its datagrams and acknowledgements instead, and read
// 0.0002 while a relay dropped 5 % of the play messages. The same count serves any numbered
// stream of datagrams (every = 1): the WebSocket door's data channels count a page's datagrams by
// their DTLS records' sequence numbers. Pure: no clock, no sockets.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "lockstep/input.hpp"

namespace lockstep {

class SeenLoss {
 public:
  static constexpr std::uint64_t kWindow = 64;  ///< messages a late one may still arrive in

  explicit SeenLoss(std::uint32_t every = 1) { set_every(every); }
  void set_every(std::uint32_t every) { every_ = every == 0 ? 1 : every; }

  /// A new connection: the gap before it is not loss. The totals stay.
  void restart() { started_ = false; }

  /// A message whose newest tick (or number) is `newest` arrived (duplicates and late ones count once).
  void saw(std::uint64_t newest) {
    const std::uint64_t slot = newest / every_;
    if (!started_) {
      started_ = true;
      first_ = top_ = slot;
      bits_ = 1;
      ++received_;
      return;
    }
    if (slot + kWindow <= top_ || slot < first_) return;  // older than the window: already judged
    if (slot > top_) {
      const std::uint64_t shift = slot - top_;
      // The oldest slots leave the window: those never seen were lost.
      for (std::uint64_t i = 0; i < shift && i < kWindow; ++i) {
        const std::uint64_t pos = kWindow - 1 - i, old = top_ - pos;
        if (top_ >= pos && old >= first_ && ((bits_ >> pos) & 1u) == 0) ++lost_;
      }
      if (shift > kWindow) lost_ += shift - kWindow;  // a gap wider than the window
      bits_ = shift >= kWindow ? 0 : bits_ << shift;
      top_ = slot;
      bits_ |= 1;
      ++received_;
      return;
    }
    const std::uint64_t pos = top_ - slot;
    if (((bits_ >> pos) & 1u) == 0) {
      bits_ |= std::uint64_t{1} << pos;
      ++received_;
    }
  }

  /// A message that carries every tick from `first` to `newest` arrived on a stream that loses
  /// nothing (a WebSocket peer sends once a frame of its own, so several ticks a message): every
  /// due message in that range counts as seen. Gaps between such messages are lateness, not loss.
  void saw_range(Tick first, Tick newest) {
    if (newest < first) return;
    const std::uint64_t last = newest / every_, lowest = first / every_;
    const std::uint64_t from = last >= kWindow ? std::max(lowest, last - (kWindow - 1)) : lowest;
    for (std::uint64_t slot = from; slot <= last; ++slot) saw(static_cast<Tick>(slot * every_));
  }

  [[nodiscard]] std::uint64_t received() const { return received_; }
  /// Messages judged lost: not seen by the time the window moved past them.
  [[nodiscard]] std::uint64_t lost() const { return lost_; }
  /// lost / (lost + received), 0 before anything.
  [[nodiscard]] double loss() const {
    const std::uint64_t n = lost_ + received_;
    return n == 0 ? 0.0 : static_cast<double>(lost_) / static_cast<double>(n);
  }

 private:
  std::uint32_t every_ = 1;
  bool started_ = false;
  std::uint64_t first_ = 0, top_ = 0, bits_ = 0;  // bit i: slot top_ - i was seen
  std::uint64_t received_ = 0, lost_ = 0;
};

}  // namespace lockstep
