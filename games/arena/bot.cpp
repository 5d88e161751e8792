#include "lockstep/bot.hpp"

#include "lockstep/rng.hpp"

namespace lockstep {

ArenaInput bot_input(std::uint64_t seed, Tick tick) {
  const std::uint64_t h = mix64(seed * 0x100000001b3ULL ^ mix64(tick / 25));
  const auto thrust = static_cast<int>(h & 0xff) % 255 - 127;     // -127..127
  const auto turn = static_cast<int>((h >> 8) & 0xff) % 255 - 127;
  // Mostly forward thrust: a bot that reverses half the time goes nowhere.
  const int forward = (h >> 16) % 4 == 0 ? thrust : (thrust < 0 ? -thrust : thrust);
  return {static_cast<std::int8_t>(forward), static_cast<std::int8_t>(turn)};
}

}  // namespace lockstep
