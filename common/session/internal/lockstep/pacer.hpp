// A real-time pacer for fixed-rate loops: it sleeps to absolute deadlines (so sleeping never
// makes it drift) and finishes each wait with a short spin (so it is punctual without burning
// a core). It reports when the loop cannot keep up and never lets a backlog spiral.
#pragma once

#include <cstdint>
#include <vector>

#include "lockstep/histogram.hpp"
#include "lockstep/input.hpp"

namespace lockstep {

struct PacerConfig {
  std::int64_t period_ns = kTickNs;          ///< time between deadlines
  std::int64_t initial_spin_ns = 100'000;    ///< spin margin before the wake-up overshoot is learned
  std::int64_t min_spin_ns = 20'000;         ///< bounds of the learned spin margin
  std::int64_t max_spin_ns = 300'000;
  int max_catch_up = 5;  ///< deadlines more than this many periods behind are skipped, not run
  /// Whether PacerStats::lateness counts each deadline. A server session, which keeps the same
  /// figure in its own statistics, leaves it off: one cold line a tick fewer.
  bool lateness_histogram = true;

  /// Sleeps to each deadline and never spins: for processes that share a core with many others
  /// (servers), where a spin takes time from its neighbours and tens of microseconds of wake-up
  /// latency do not matter against a 10 ms tick.
  static PacerConfig sleep_only() {
    PacerConfig c;
    c.initial_spin_ns = c.min_spin_ns = c.max_spin_ns = 0;
    return c;
  }
};

/// Lateness and cost figures of a paced loop.
struct PacerStats {
  std::uint64_t ticks = 0;        ///< deadlines reached
  std::uint64_t late_ticks = 0;   ///< deadlines reached more than one period late
  std::uint64_t skipped = 0;      ///< deadlines dropped by the catch-up cap
  std::int64_t max_lateness_ns = 0;
  Histogram lateness;             ///< per deadline, microseconds (unless PacerConfig::lateness_histogram is off)
};

/// Waits for deadline `start + n * period`, n = 0, 1, 2, ... Time is read from the monotonic clock.
class Pacer {
 public:
  explicit Pacer(PacerConfig config = {});

  /// Sets deadline 0 to `start_ns` (monotonic) and forgets the statistics.
  void start(std::int64_t start_ns);
  /// The next deadline, monotonic nanoseconds.
  [[nodiscard]] std::int64_t next_deadline() const { return start_ns_ + next_ * config_.period_ns; }
  /// Index of the next deadline.
  [[nodiscard]] std::int64_t next_index() const { return next_; }

  /// Waits until the next deadline or until `fd` (if >= 0) is readable, whichever comes first.
  /// Returns true when the deadline was reached (then call reached()), false on readable fd.
  bool wait(int fd = -1);
  /// Waits until monotonic time `deadline_ns` or until `fd` is readable; true on the deadline.
  bool wait_until(std::int64_t deadline_ns, int fd = -1);

  /// Marks the next deadline as served at `now_ns`: records its lateness and moves on. When the
  /// loop has fallen more than max_catch_up periods behind, the missed deadlines are skipped
  /// (counted) and the schedule resumes from now: the loop slows rather than spirals.
  void reached(std::int64_t now_ns);

  [[nodiscard]] const PacerStats& stats() const { return stats_; }
  [[nodiscard]] std::int64_t spin_ns() const { return spin_ns_; }

 private:
  PacerConfig config_;
  std::int64_t start_ns_ = 0;
  std::int64_t next_ = 0;
  std::int64_t spin_ns_;
  PacerStats stats_;
};

/// The p-th percentile (0..100) of `values` (copied and sorted); 0 for none.
double percentile(std::vector<double> values, double p);

}  // namespace lockstep
