// Player ticks for hand-made play messages in tests: inputs (and commands) in, the span of
// pointers pack_ticks() takes out, and a ClientPlay of them (client_play below).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/protocol.hpp"

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

/// A client's play message as a client sends it: `inputs` from tick `first`, hashes from
/// `hash_first`.
inline protocol::Bytes client_play(Tick first, std::span<const PlayerTick* const> inputs, Tick frame_ack,
                                   Tick hash_first, std::vector<std::uint64_t> hashes, std::uint32_t epoch = 0) {
  protocol::ClientPlay m;
  m.frame_ack = frame_ack;
  m.input_first_tick = first;
  m.input_count = static_cast<std::uint32_t>(inputs.size());
  pack_ticks(inputs, m.inputs);
  m.hash_first_tick = hash_first;
  m.hashes = std::move(hashes);
  m.epoch = epoch;
  return protocol::client_play(m);
}

}  // namespace lockstep::testing
