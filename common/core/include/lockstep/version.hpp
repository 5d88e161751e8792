// Versions every executable reports and the protocol checks.
#pragma once

#include <cstdint>

namespace lockstep {

inline constexpr const char* kVersion = "0.1.0";
/// Bumped whenever the wire format changes incompatibly; a mismatch is refused at join.
inline constexpr std::uint32_t kProtocolVersion = 10;

}  // namespace lockstep
