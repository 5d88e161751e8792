// The clocks the shells read (clock.hpp); nothing below the net layer reads one.
#include "lockstep/clock.hpp"

namespace lockstep {

std::int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
std::int64_t process_cpu_ns() { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace lockstep
