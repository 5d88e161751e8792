// Drives servers and clients in one thread over real loopback ENet sockets, waiting on all
// their sockets at once, with the real clock. Each part runs as if it were its own process: it is
// updated only when the time it asked for has come or its socket is readable.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace lockstep::testing {

struct Driven {
  std::function<std::int64_t(std::int64_t)> update;  ///< returns the next wake time
  std::function<int()> fd;  ///< the socket to watch now; -1: none until the part's wake time
  /// On a simulated network (drive_simulated, sim_network.hpp): when something next waits for
  /// the part, as the socket's readiness says on a real one; unset or INT64_MAX: nothing.
  std::function<std::int64_t()> due;

  Driven(std::function<std::int64_t(std::int64_t)> update_, std::function<int()> fd_ = [] { return -1; },
         std::function<std::int64_t()> due_ = {})
      : update(std::move(update_)), fd(std::move(fd_)), due(std::move(due_)) {}
};

/// Updates every part until `done()` or `timeout_ns` of real time; false on timeout.
bool drive(const std::vector<Driven>& parts, const std::function<bool()>& done, std::int64_t timeout_ns);

}  // namespace lockstep::testing
