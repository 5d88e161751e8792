// The loop every executable runs, and its stop signals (event_loop.hpp).
#include "lockstep/event_loop.hpp"

#include <csignal>
#include <unistd.h>

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

}  // namespace lockstep
