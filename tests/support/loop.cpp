#include "support/loop.hpp"

#include <poll.h>

#include <algorithm>

#include "lockstep/clock.hpp"

namespace lockstep::testing {

bool drive(const std::vector<Driven>& parts, const std::function<bool()>& done, std::int64_t timeout_ns) {
  const std::int64_t give_up = monotonic_ns() + timeout_ns;
  std::vector<std::int64_t> wake(parts.size(), 0);
  std::vector<bool> readable(parts.size(), false);
  std::vector<pollfd> fds(parts.size());
  while (!done()) {
    std::int64_t now = monotonic_ns();
    if (now > give_up) return false;
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (now >= wake[i] || readable[i]) wake[i] = parts[i].update(now);
    if (done()) return true;
    std::int64_t next = now + 50'000'000;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      next = std::min(next, wake[i]);
      fds[i] = {parts[i].fd(), POLLIN, 0};
    }
    now = monotonic_ns();
    const std::int64_t wait = std::max<std::int64_t>(0, next - now);
    const timespec ts = to_timespec(wait);
    const int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    for (std::size_t i = 0; i < parts.size(); ++i) readable[i] = n > 0 && (fds[i].revents & POLLIN) != 0;
  }
  return true;
}

}  // namespace lockstep::testing
