// How far ahead of the session's tick clock a client samples its input (its lead), set from what
// the server measures of its inputs' arrival. Pure: no clock, no socket.
//
// The server reports, for the newest input it has first seen, how long before its tick's
// deadline it arrived (the slack). A slack depends on the lead that input was sampled with, so
// the controller takes away that lead: base = slack - lead_at_sampling is what the slack would
// be with no lead at all (input delay minus the round trip, minus jitter and any resend after a
// loss) and does not change when the lead does. Its worst value over the last `window` reports
// says the least lead at which every recent input would have arrived in time:
//   target = margin - min(base),  clamped to [min_ns, max_ns],
// where the margin grows with the spread of the recent bases (the path's jitter), from
// margin_min_ns on a steady path to margin_ns on a jittery one.
// The lead rises to the target at once (a late input is filled and holds the others up for the
// server's grace wait) and falls towards it by 1/decay_div of the gap per report (early inputs
// cost only latency). Because the measurement does not depend on the lead, a change of lead never
// spoils the measurements that follow it, and nothing overshoots while reports are in flight.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/lead_config.hpp"

namespace lockstep {


class LeadController {
 public:
  explicit LeadController(LeadConfig config = default_lead_config());

  /// The lead to sample with now, nanoseconds.
  [[nodiscard]] std::int64_t lead_ns() const { return lead_; }
  /// Before any report: start from a lead of at least `ns` (the join's round trip, say), clamped.
  void seed(std::int64_t ns) { if (newest_ == 0) lead_ = std::clamp(std::max(lead_, ns), config_.min_ns, config_.max_ns); }
  /// Remembers the lead tick `t`'s input was sampled with.
  void sampled(Tick t) { sampled_lead_[t % kRing] = {t, lead_}; }
  /// One report: tick `t`'s input first arrived `slack_ns` before its deadline (negative: late).
  /// Reports for ticks not sampled here, or older than the newest seen, are ignored.
  void report(Tick t, std::int64_t slack_ns);
  /// The lead the recent reports ask for, before clamping (0 before any report).
  [[nodiscard]] std::int64_t wanted_ns() const { return wanted_; }
  /// True when the reports ask for more than max_ns: the round trip exceeds the session's limit.
  [[nodiscard]] bool over_limit() const { return wanted_ > config_.max_ns; }
  [[nodiscard]] const LeadConfig& config() const { return config_; }
  /// The margin for recent arrivals that spread over `spread_ns` (LeadConfig::margin_ns).
  [[nodiscard]] std::int64_t margin(std::int64_t spread_ns) const;

 private:
  static constexpr std::size_t kRing = 512;
  struct Sampled {
    Tick tick = 0;
    std::int64_t lead = 0;
  };
  LeadConfig config_;
  std::int64_t lead_;
  std::int64_t wanted_ = 0;
  Tick newest_ = 0;
  std::vector<Sampled> sampled_lead_ = std::vector<Sampled>(kRing);
  std::vector<std::int64_t> base_;  // ring of the last `window` bases
  std::size_t base_next_ = 0;
};

}  // namespace lockstep
