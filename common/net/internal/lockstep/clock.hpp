// The monotonic clock, for the shells (executables and loops); the core never reads it.
#pragma once

#include <time.h>

#include <cstdint>

namespace lockstep {

/// A timespec as nanoseconds, and back.
inline std::int64_t to_ns(const timespec& ts) { return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec; }
inline timespec to_timespec(std::int64_t ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return ts;
}

/// Any clock (CLOCK_MONOTONIC, CLOCK_REALTIME, a CPU-time clock) in nanoseconds.
inline std::int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return to_ns(ts);
}

/// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonic_ns();
/// How far CLOCK_REALTIME is ahead of CLOCK_MONOTONIC now: a stamp on the realtime clock (the
/// kernel's socket timestamps) less this is on the monotonic clock.
inline std::int64_t realtime_ahead_ns() { return clock_ns(CLOCK_REALTIME) - monotonic_ns(); }
/// CPU time this process has used (all threads), nanoseconds.
std::int64_t process_cpu_ns();

/// CPU this process uses per tick while ticks run: from the first tick it sees to the latest
/// sampled one, so start-up, joining and shutdown are left out. Call observe() with the executed
/// tick as often as you like: it reads the CPU clock (a system call) once per `every` ticks.
struct TickCpuMeter {
  std::uint64_t every = 100;
  std::uint64_t first = 0, last = 0;
  std::int64_t at_first = 0, at_last = 0;
  /// `final`: the last tick of the run, always sampled.
  void observe(std::uint64_t executed, bool final = false) {
    if (executed == last || (first != 0 && executed < last + every && !final)) return;
    const std::int64_t cpu = process_cpu_ns();
    if (first == 0) {
      first = executed;
      at_first = cpu;
    }
    last = executed;
    at_last = cpu;
  }
  /// Microseconds of CPU per tick between the first and the latest observed tick.
  [[nodiscard]] double us_per_tick() const {
    return last > first ? static_cast<double>(at_last - at_first) / 1e3 / static_cast<double>(last - first) : 0.0;
  }
};

}  // namespace lockstep
