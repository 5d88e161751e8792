#include "lockstep/input_window.hpp"

#include <algorithm>
#include <climits>

namespace lockstep {

bool InputWindow::receive(Tick first, std::span<const std::uint16_t> inputs, Tick next_tick,
                          std::int64_t next_deadline, std::int64_t arrived) {
  bool too_far = false;
  // The slack reported back is the worst of the inputs this message brought first (one that was
  // lost before arrives late here); the client's lead controller takes the lead that input was
  // sampled with out of it (see lead.hpp).
  const Tick seen_before = seen_;
  std::int64_t worst = INT64_MAX;
  Tick worst_tick = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tick t = first + static_cast<Tick>(i);
    if (t < first) continue;  // wrapped
    if (t >= next_tick + kSize) {
      too_far = true;
      continue;
    }
    if (t > seen_before) {
      const std::int64_t deadline = next_deadline + (std::int64_t{t} - std::int64_t{next_tick}) * kTickNs;
      if (deadline - arrived < worst) worst = deadline - arrived, worst_tick = t;
    }
    seen_ = std::max(seen_, t);
    if (t < next_tick) continue;  // already assembled: a redundant copy, or too late
    if (tick_[t % kSize] != t) arrived_[t % kSize] = arrived;
    tick_[t % kSize] = t;
    input_[t % kSize] = PlayerInput::unpack(inputs[i]);
  }
  if (worst_tick > slack_tick_) {
    slack_us_ = static_cast<std::int32_t>(std::clamp<std::int64_t>(worst / 1000, -10'000'000, 10'000'000));
    slack_tick_ = worst_tick;
  }
  advance_ack(next_tick);
  return !too_far;
}

InputWindow::Fill InputWindow::take(Tick t, std::int64_t now, std::uint32_t rtt_us, std::int64_t last_heard) {
  Fill fill = Fill::None;
  if (has(t)) {
    last_ = input_[t % kSize];
    latency_.add_us((now - arrived_[t % kSize]) / 1000 + rtt_us);
  } else if (now - last_heard > kSilentFillNs) {
    fill = Fill::Silent;  // nothing heard for a while
    ++fills_silent_;
  } else if (seen_ > t) {
    fill = Fill::Lost;  // newer inputs came, but not this one
    ++fills_lost_;
  } else {
    fill = Fill::Late;  // nothing this new has come yet: its lead is too short for its round trip
    ++fills_late_;
  }
  settle(t);
  advance_ack(t);
  return fill;
}

void InputWindow::settle(Tick t) { ack_ = std::max(ack_, t); }

void InputWindow::advance_ack(Tick next_tick) {
  while (tick_[(ack_ + 1) % kSize] == ack_ + 1 && ack_ + 1 < next_tick + kSize) ++ack_;
}

}  // namespace lockstep
