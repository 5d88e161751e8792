#include "support/loop.hpp"

#include <poll.h>

#include <algorithm>

#include "lockstep/clock.hpp"

namespace lockstep::testing {

bool drive(const std::vector<Driven>& parts, const std::function<bool()>& done, std::int64_t timeout_ns) {
  const std::int64_t give_up = monotonic_ns() + timeout_ns;
  while (!done()) {
    std::int64_t now = monotonic_ns();
    if (now > give_up) return false;
    std::int64_t wake = now + 50'000'000;
    for (const Driven& d : parts) wake = std::min(wake, d.update(now));
    if (done()) return true;
    std::vector<pollfd> fds;
    for (const Driven& d : parts) fds.push_back({d.fd(), POLLIN, 0});
    now = monotonic_ns();
    if (wake > now) {
      const std::int64_t wait = wake - now;
      timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
      ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    }
  }
  return true;
}

}  // namespace lockstep::testing
