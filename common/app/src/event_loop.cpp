// The loop every executable runs, and its stop signals (event_loop.hpp).
#include "lockstep/event_loop.hpp"

#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "lockstep/clock.hpp"
#include "lockstep/pacer.hpp"

namespace lockstep {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_terms_received{0};

namespace {
extern "C" void on_stop_signal(int) {
  if (g_stop_requested.exchange(true)) _exit(130);
}
extern "C" void on_term_signal(int) {
  if (g_terms_received.fetch_add(1) >= 2) _exit(143);
}
}  // namespace

void install_stop_signals(bool term_drains) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  if (term_drains) sa.sa_handler = on_term_signal;
  sigaction(SIGTERM, &sa, nullptr);
}

void run_event_loop(int fd, const std::function<Wake(std::int64_t)>& update, const std::function<bool()>& done,
                    PacerConfig pacing) {
  Pacer waiter(pacing);
  while (!done()) {
    const Wake wake = update(monotonic_ns());
    if (done()) break;
    waiter.wait_until(wake.at, wake.on_readable ? fd : -1);
  }
}

void run_event_loops(const std::vector<int>& fds, const std::function<Wake(std::size_t, std::int64_t)>& update,
                     const std::function<bool(std::size_t)>& done, Histogram* wake_delay) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{ep};
  struct Loop {
    std::int64_t at = 0;       // run at this time (0: at once)
    bool readable = false;     // its fd became readable since it last ran
    bool watching = true;      // its fd is in the epoll set with EPOLLIN
    bool live = true;
  };
  std::vector<Loop> loops(fds.size());
  std::size_t live = 0;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (fds[i] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) loops[i].watching = false;
    if (done(i)) loops[i].live = false;
    else ++live;
  }
  std::vector<epoll_event> events(std::max<std::size_t>(fds.size(), 1));
  bool pwait2 = true;
  // The loops to run in a wake, earliest deadline first: after a late wake that finds several
  // groups' ticks due, the tick that has waited longest runs first.
  std::vector<std::pair<std::int64_t, std::size_t>> due;
  due.reserve(fds.size());
  while (live > 0) {
    const std::int64_t now = monotonic_ns();
    due.clear();
    for (std::size_t i = 0; i < loops.size(); ++i) {
      const Loop& l = loops[i];
      if (l.live && (l.at <= now || l.readable)) due.emplace_back(std::min(l.at, now), i);
    }
    std::sort(due.begin(), due.end());
    for (const auto& [at, i] : due) {
      Loop& l = loops[i];
      const Wake w = update(i, monotonic_ns());  // its own time: the loops before it took some
      l.at = w.at;
      l.readable = false;
      if (done(i)) {
        l.live = false;
        --live;
        if (l.watching) epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], nullptr);
        continue;
      }
      // A loop that reads its socket at its deadline is not woken by it: level-triggered, an
      // unread socket would wake this thread again at once. Its fd leaves the set (masking
      // would not do: an error condition is reported even with no events asked).
      if (w.on_readable != l.watching && fds[i] >= 0) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        if (epoll_ctl(ep, w.on_readable ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fds[i], &ev) == 0) l.watching = w.on_readable;
      }
    }
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    for (const Loop& l : loops)
      if (l.live) next = std::min(next, l.at);
    if (live == 0) break;
    const std::int64_t wait_from = monotonic_ns();
    const std::int64_t wait_ns = std::max<std::int64_t>(0, next - wait_from);
    const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    int n = -1;
    if (pwait2) {
      n = epoll_pwait2(ep, events.data(), static_cast<int>(events.size()), &timeout, nullptr);
      pwait2 = !(n < 0 && errno == ENOSYS);
    }
    if (!pwait2) {  // before Linux 5.11: milliseconds, rounded up
      n = epoll_wait(ep, events.data(), static_cast<int>(events.size()),
                     static_cast<int>(std::min<std::int64_t>((wait_ns + 999'999) / 1'000'000, 1'000'000)));
    }
    // A wait that slept toward a deadline and ended at or past it: how far past.
    if (wake_delay && next > wait_from && next != std::numeric_limits<std::int64_t>::max()) {
      const std::int64_t woke = monotonic_ns();
      if (woke >= next) wake_delay->add_us((woke - next) / 1000);
    }
    for (int e = 0; e < n; ++e) loops[events[static_cast<std::size_t>(e)].data.u64].readable = true;
  }
}

bool enter_realtime(std::string* why) {
  sched_param param{};
  param.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) return true;
  if (why) *why = errno == EPERM ? "not permitted (it needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of 1 or more: ulimit -r)"
                                 : std::strerror(errno);
  return false;
}

void leave_realtime() {
  sched_param param{};
  sched_setscheduler(0, SCHED_OTHER, &param);
}

}  // namespace lockstep
