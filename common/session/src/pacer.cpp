// A real-time pacer: sleeps to absolute deadlines and finishes with a short spin (pacer.hpp).
#include "lockstep/pacer.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

#include "lockstep/clock.hpp"

namespace lockstep {

namespace {

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

Pacer::Pacer(PacerConfig config) : config_(config), spin_ns_(config.initial_spin_ns) {
  // The default 50 us timer slack would be added to every sleep; ask for the tightest.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

void Pacer::start(std::int64_t start_ns) {
  start_ns_ = start_ns;
  next_ = 0;
  stats_ = {};
}

bool Pacer::wait(int fd) { return wait_until(next_deadline(), fd); }

bool Pacer::wait_until(std::int64_t deadline_ns, int fd) {
  for (;;) {
    std::int64_t now = monotonic_ns();
    if (now >= deadline_ns) return true;
    const std::int64_t wake_at = deadline_ns - spin_ns_;
    if (now < wake_at) {
      // Sleep to an absolute time: the wait ends at the same instant however long the caller
      // took to get here, so no error accumulates from one period to the next.
      if (fd >= 0) {
        pollfd p{fd, POLLIN, 0};
        const timespec rel = to_timespec(wake_at - now);
        if (::ppoll(&p, 1, &rel, nullptr) > 0) return false;
      } else {
        const timespec abs = to_timespec(wake_at);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, nullptr) == EINTR) {
        }
      }
      now = monotonic_ns();
      if (now >= wake_at) {
        // Learn how late sleeps wake up on this machine: the spin margin follows the worst
        // recent overshoot quickly and relaxes slowly.
        // A rare long stall (a preempted VM) must not make every later wait spin long, so
        // one sample moves the margin only a quarter of the way up, and it relaxes by 1/16.
        const std::int64_t want = (now - wake_at) + config_.min_spin_ns;
        spin_ns_ = want > spin_ns_ ? spin_ns_ + (want - spin_ns_) / 4 : spin_ns_ - (spin_ns_ - want) / 16;
        spin_ns_ = std::clamp(spin_ns_, config_.min_spin_ns, config_.max_spin_ns);
      }
      continue;
    }
    // The short spin to the exact deadline.
    while (now < deadline_ns) {
      if (fd >= 0 && readable(fd)) return false;
      now = monotonic_ns();
    }
    return true;
  }
}

void Pacer::reached(std::int64_t now_ns) {
  const std::int64_t lateness = now_ns - next_deadline();
  ++stats_.ticks;
  stats_.max_lateness_ns = std::max(stats_.max_lateness_ns, lateness);
  if (config_.lateness_histogram) stats_.lateness.add_us(lateness / 1000);
  if (lateness > config_.period_ns) ++stats_.late_ticks;
  ++next_;
  const std::int64_t behind = (now_ns - next_deadline()) / config_.period_ns;
  if (behind > config_.max_catch_up) {
    stats_.skipped += static_cast<std::uint64_t>(behind);
    next_ += behind;
  }
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(rank);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

}  // namespace lockstep
