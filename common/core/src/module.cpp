#include "lockstep/module.hpp"

namespace lockstep {

std::uint64_t join_fingerprint(const WorldFactory& factory) {
  const auto probe = factory ? factory(WorldParams{{}, 1}) : nullptr;
  return probe ? probe->fingerprint() : 0;
}

PlayerTick blank_tick(const Module& m) {
  PlayerTick t;
  t.input.assign(m.input_size, 0);
  return t;
}

}  // namespace lockstep
