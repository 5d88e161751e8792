// The loop every executable runs: update a session with the current time, then wait until the
// time it asks for or until its socket is readable. Sleeps to absolute deadlines (no drift)
// with a short final spin (no busy-waiting core).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/histogram.hpp"
#include "lockstep/pacer.hpp"

namespace lockstep {

/// Set by SIGINT and SIGTERM once install_stop_signals() has run.
extern std::atomic<bool> g_stop_requested;
/// SIGTERMs received, when install_stop_signals(true) made SIGTERM a request to drain.
extern std::atomic<int> g_terms_received;
/// Installs SIGINT/SIGTERM handlers that set g_stop_requested (a second signal exits at once).
/// With `term_drains` (a server in a fleet), SIGTERM only counts in g_terms_received: the caller
/// drains on the first and stops on the second; a third exits at once. SIGINT stops as always.
void install_stop_signals(bool term_drains = false);

/// When a loop wants to run again: at `at` (monotonic ns), or sooner when its socket becomes
/// readable if `on_readable`.
struct Wake {
  std::int64_t at = 0;
  bool on_readable = true;
};

/// Runs `update(now)` -> Wake, waiting in between, until `done()` is true. `pacing` says how the
/// waits end: the default spins the last stretch for precision; sleep_only() never spins.
void run_event_loop(int fd, const std::function<Wake(std::int64_t)>& update, const std::function<bool()>& done,
                    PacerConfig pacing = {});

/// Runs several loops on one thread (a server hosting several sessions): `update(i, now)` runs loop
/// i when its Wake is due or, if it asked, when fds[i] became readable; `done(i)` ends loop i.
/// Returns when every loop is done. One wait serves them all (epoll, to the nanosecond), so N
/// sessions cost one wake per distinct deadline, not N processes' wakes and switches. Nothing spins.
/// The loops due in a wake run earliest deadline first (a readable one as if due then).
/// With `wake_delay`, each wait that slept toward a deadline and ended at or past it adds how far
/// past: the time the machine took to wake this thread (its timer and scheduler), apart from the
/// loops' own work.
void run_event_loops(const std::vector<int>& fds, const std::function<Wake(std::size_t, std::int64_t)>& update,
                     const std::function<bool(std::size_t)>& done, Histogram* wake_delay = nullptr);

/// Real-time priority for the calling thread: SCHED_FIFO at priority 1, above every ordinary
/// thread, so that a kernel thread or another process on its core cannot hold it past a tick's
/// deadline for milliseconds (on a kernel that preempts only where the running code allows it,
/// the woken thread waits for that point; a real-time one is the next to run). Threads and
/// processes it starts afterwards are ordinary again (SCHED_RESET_ON_FORK); threads started
/// before keep their own. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1: false and why
/// otherwise, and nothing changed. Linux bounds real-time threads to 95 % of a core by default.
bool enter_realtime(std::string* why);
/// The calling thread back to ordinary scheduling (SCHED_OTHER) after enter_realtime().
void leave_realtime();

}  // namespace lockstep
