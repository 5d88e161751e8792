// How far ahead of the tick clock a client samples its input, from what the server measures
// (lead.hpp).
#include "lockstep/lead.hpp"

#include <algorithm>

namespace lockstep {

LeadController::LeadController(LeadConfig config) : config_(config), lead_(config.initial_ns) {
  config_.window = std::max<std::size_t>(1, config_.window);
  config_.decay_div = std::max<std::int64_t>(1, config_.decay_div);
}

void LeadController::report(Tick t, std::int64_t slack_ns) {
  const Sampled& s = sampled_lead_[t % kRing];
  if (t == 0 || s.tick != t || t <= newest_) return;
  newest_ = t;
  const std::int64_t base = slack_ns - s.lead;
  if (base_.size() < config_.window) {
    base_.push_back(base);
  } else {
    base_[base_next_] = base;
    base_next_ = (base_next_ + 1) % base_.size();
  }
  const auto [low, high] = std::minmax_element(base_.begin(), base_.end());
  wanted_ = margin(*high - *low) - *low;
  const std::int64_t target = std::clamp(wanted_, config_.min_ns, config_.max_ns);
  if (target > lead_) lead_ = target;
  else lead_ -= (lead_ - target + config_.decay_div - 1) / config_.decay_div;
}

std::int64_t LeadController::margin(std::int64_t spread_ns) const {
  return std::clamp(spread_ns / 2 + config_.margin_min_ns, std::min(config_.margin_min_ns, config_.margin_ns),
                    config_.margin_ns);
}

}  // namespace lockstep
