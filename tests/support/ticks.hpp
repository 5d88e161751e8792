// Player ticks for hand-made play messages in tests: inputs (and commands) in, the span of
// pointers protocol::client_tick() takes out.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "lockstep/input.hpp"

namespace lockstep::testing {

struct Ticks {
  std::vector<PlayerTick> items;
  std::vector<const PlayerTick*> ptrs;

  Ticks(std::initializer_list<std::vector<std::uint8_t>> inputs) {
    for (const auto& in : inputs) items.push_back(PlayerTick{in, {}});
    point();
  }
  /// Adds a command to tick i.
  Ticks& command(std::size_t i, std::vector<std::uint8_t> bytes) {
    items[i].commands.add(bytes);
    return *this;
  }
  operator std::span<const PlayerTick* const>() const { return ptrs; }

 private:
  void point() {
    for (const PlayerTick& t : items) ptrs.push_back(&t);
  }
};

}  // namespace lockstep::testing
