// How far ahead of the server's tick clock a client samples its input: the settings of the lead
// controller (lead.hpp), a field of ClientConfig.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

struct LeadConfig {
  std::int64_t initial_ns = 500'000;      ///< the lead before the first report
  std::int64_t min_ns = 200'000;          ///< never sample later than this before the deadline
  std::int64_t max_ns = 1'500'000'000;    ///< the session's limit: round trips beyond it are filled
  /// How early the worst recent input should arrive: half the spread of the recent arrivals (the
  /// path's jitter) plus margin_min_ns, at most margin_ns. A steady path (loopback, a LAN) needs
  /// little; a jittery one gets the whole margin_ns.
  std::int64_t margin_ns = 4'000'000;
  std::int64_t margin_min_ns = 500'000;
  std::size_t window = 100;               ///< reports the worst case is taken over (about 1 s)
  std::int64_t decay_div = 16;            ///< a lead above target falls by gap/decay_div per report
};

constexpr LeadConfig default_lead_config() { return {}; }

}  // namespace lockstep
