// Drives servers and clients in one thread over real loopback ENet sockets, waiting on all
// their sockets at once, with the real clock.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace lockstep::testing {

struct Driven {
  std::function<std::int64_t(std::int64_t)> update;  ///< returns the next wake time
  std::function<int()> fd;
};

/// Updates every part until `done()` or `timeout_ns` of real time; false on timeout.
bool drive(const std::vector<Driven>& parts, const std::function<bool()>& done, std::int64_t timeout_ns);

}  // namespace lockstep::testing
