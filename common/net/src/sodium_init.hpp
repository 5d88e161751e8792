// libsodium is initialised once, before its first use (it picks its fastest code and opens the
// system's random source).
#pragma once

namespace lockstep {
void ensure_sodium();
}  // namespace lockstep
