// The monotonic clock, for the shells (executables and loops); the core never reads it.
#pragma once

#include <cstdint>

namespace lockstep {

/// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonic_ns();

}  // namespace lockstep
