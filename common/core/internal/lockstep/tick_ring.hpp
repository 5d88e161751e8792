// The values of the last N ticks, by tick: one type for every "array indexed by tick % N, with
// the tick it holds beside it". A slot holds the value of the tick written into it last; asking
// for another tick of that slot finds nothing. Tick 0 marks an empty slot (ticks start at 1).
#pragma once

#include <cstddef>
#include <vector>

#include "lockstep/input.hpp"

namespace lockstep {

template <class T>
class TickRing {
 public:
  explicit TickRing(std::size_t capacity) : slots_(capacity) {}

  /// The slot of tick t, now holding t: the caller writes its value (the old one is still there).
  T& put(Tick t) {
    Slot& s = slots_[t % slots_.size()];
    s.tick = t;
    return s.value;
  }
  /// Tick t's value, or nullptr when its slot holds another tick or none.
  [[nodiscard]] const T* find(Tick t) const {
    const Slot& s = slots_[t % slots_.size()];
    return t != 0 && s.tick == t ? &s.value : nullptr;
  }
  [[nodiscard]] T* find(Tick t) {
    Slot& s = slots_[t % slots_.size()];
    return t != 0 && s.tick == t ? &s.value : nullptr;
  }
  /// Empties tick t's slot if it holds t.
  void forget(Tick t) {
    if (find(t)) slots_[t % slots_.size()].tick = 0;
  }
  /// Ticks it holds at most: a tick that many older than the newest is gone.
  [[nodiscard]] std::size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Tick tick = 0;
    T value{};
  };
  std::vector<Slot> slots_;
};

}  // namespace lockstep
