// The loop every executable runs: update a session with the current time, then wait until the
// time it asks for or until its socket is readable. Sleeps to absolute deadlines (no drift)
// with a short final spin (no busy-waiting core).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace lockstep {

/// Set by SIGINT and SIGTERM once install_stop_signals() has run.
extern std::atomic<bool> g_stop_requested;
/// Installs SIGINT/SIGTERM handlers that set g_stop_requested (a second signal exits at once).
void install_stop_signals();

/// Runs `update(now)` -> next wake time, waiting on `fd` in between, until `done()` is true.
void run_event_loop(int fd, const std::function<std::int64_t(std::int64_t)>& update, const std::function<bool()>& done);

}  // namespace lockstep
