// Ticks and input frames: the only things that cross the network during play.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace lockstep {

/// A simulation tick. Tick 0 is the initial state; executing input frame T turns state T-1 into state T.
using Tick = std::uint32_t;

inline constexpr int kTickRate = 100;                     ///< ticks per second, fixed
inline constexpr std::int64_t kTickNs = 1'000'000'000 / kTickRate;  ///< one tick, nanoseconds
inline constexpr int kMaxPlayers = 32;                    ///< player slots fit a 32-bit mask

/// One player's input for one tick, quantized: floats never cross the network.
struct PlayerInput {
  std::int8_t thrust = 0;  ///< forward thrust, -127..127 (full reverse .. full forward)
  std::int8_t turn = 0;    ///< turn rate, -127..127 (full right .. full left)

  /// Packs into 16 bits (thrust in the low byte), the wire and file form.
  [[nodiscard]] constexpr std::uint16_t pack() const {
    return static_cast<std::uint16_t>(static_cast<std::uint8_t>(thrust) |
                                      (static_cast<std::uint16_t>(static_cast<std::uint8_t>(turn)) << 8));
  }
  /// Inverse of pack(); every 16-bit value is a valid input (-128 is read as -127).
  [[nodiscard]] static constexpr PlayerInput unpack(std::uint16_t bits) {
    auto clamp = [](std::int8_t v) { return v == -128 ? std::int8_t{-127} : v; };
    return {clamp(static_cast<std::int8_t>(bits & 0xff)), clamp(static_cast<std::int8_t>(bits >> 8))};
  }
  friend constexpr bool operator==(PlayerInput, PlayerInput) = default;
};

/// Every player's input for one tick, as the server confirmed it.
struct InputFrame {
  Tick tick = 0;
  std::uint32_t present = 0;  ///< bit p set: slot p is in the session on this tick
  std::uint32_t filled = 0;   ///< bit p set: slot p's input did not arrive in time; its previous one was repeated
  std::array<PlayerInput, kMaxPlayers> inputs{};  ///< by slot; slots not present hold zero input

  friend bool operator==(const InputFrame&, const InputFrame&) = default;
};

/// Frames flattened the way the wire and replay formats store them: per frame the present and
/// filled masks, and `players` packed inputs in slot order.
struct PackedFrames {
  std::vector<std::uint32_t> present, filled;
  std::vector<std::uint16_t> inputs;
};
PackedFrames pack_frames(std::span<const InputFrame> frames, std::uint32_t players);
/// The same into `out`, reusing its memory (for the per-tick messages).
void pack_frames(std::span<const InputFrame> frames, std::uint32_t players, PackedFrames& out);

}  // namespace lockstep
