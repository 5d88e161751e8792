// The server's view of one slot's inputs: arrivals by tick, fills, acknowledgements, slack
// (input_window.hpp).
#include "lockstep/input_window.hpp"

#include <algorithm>
#include <climits>

namespace lockstep {

InputWindow::InputWindow(std::uint32_t input_size)
    : input_size_(input_size), input_(kSize * input_size, 0), last_(input_size, 0) {}

bool InputWindow::receive(Tick first, const PackedView& inputs, std::size_t count, Tick next_tick,
                          std::int64_t next_deadline, std::int64_t arrived) {
  bool too_far = false;
  // The slack reported back is the worst of the inputs this message brought first (one that was
  // lost before arrives late here); the client's lead controller takes the lead that input was
  // sampled with out of it (see lead.hpp).
  const Tick seen_before = seen_;
  std::int64_t worst = INT64_MAX;
  Tick worst_tick = 0;
  PackedReader reader(inputs, input_size_);
  thread_local Commands cmds;
  for (std::size_t i = 0; i < count; ++i) {
    const auto input = reader.next(&cmds);
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
    const std::size_t at = t % kSize;
    if (t < next_tick) {
      // Already assembled: a redundant copy, or too late. Commands of a filled tick (whose ring
      // place still holds tick t - kSize or older) go with the next tick instead, once.
      Entry& e = ring_[at];
      if (e.delivered != t && next_tick - t < kSize && e.tick != t) {
        e.delivered = t;
        if (!cmds.empty()) {
          commands_carried_ += cmds.size();
          queue(cmds);
        }
      }
      continue;
    }
    Entry& e = ring_[at];
    if (e.tick != t) e.arrived = arrived;
    e.tick = t;
    std::copy(input.begin(), input.end(), input_.begin() + static_cast<std::ptrdiff_t>(at * input_size_));
    // Most inputs carry no commands: their place is read and written only when they or it hold some.
    if (!cmds.empty() || with_commands_.test(at)) {
      commands_[at] = cmds;
      with_commands_.set(at, !cmds.empty());
    }
  }
  if (worst_tick > slack_tick_) {
    slack_us_ = static_cast<std::int32_t>(std::clamp<std::int64_t>(worst / 1000, -10'000'000, 10'000'000));
    slack_tick_ = worst_tick;
  }
  advance_ack(next_tick);
  return !too_far;
}

void InputWindow::queue(const Commands& cmds) {
  const auto bytes = cmds.all_bytes();
  carry_bytes_.insert(carry_bytes_.end(), bytes.begin(), bytes.end());
  const auto sizes = cmds.sizes();
  carry_sizes_.insert(carry_sizes_.end(), sizes.begin(), sizes.end());
}

InputWindow::Fill InputWindow::take(Tick t, std::int64_t now, std::uint32_t rtt_us, std::int64_t last_heard) {
  Fill fill = Fill::None;
  const std::size_t at = t % kSize;
  if (has(t)) {
    std::copy_n(input_.begin() + static_cast<std::ptrdiff_t>(at * input_size_), input_size_, last_.begin());
    Entry& e = ring_[at];
    latency_.add_us((now - e.arrived) / 1000 + rtt_us);
    e.delivered = t;
    if (with_commands_.test(at)) {
      queue(commands_[at]);
      commands_[at].clear();
      with_commands_.reset(at);
    }
  } else if (silent(now, last_heard)) {
    fill = Fill::Silent;  // nothing heard for a while
    ++fills_silent_;
  } else if (seen_ > t) {
    fill = Fill::Lost;  // newer inputs came, but not this one
    ++fills_lost_;
  } else {
    fill = Fill::Late;  // nothing this new has come yet: its lead is too short for its round trip
    ++fills_late_;
  }
  // This tick's commands: the oldest waiting, as many whole ones as the limits allow.
  taken_.clear();
  std::size_t n = 0, offset = 0;
  while (n < carry_sizes_.size() && taken_.fits(carry_sizes_[n])) {
    taken_.add(std::span<const std::uint8_t>(carry_bytes_).subspan(offset, carry_sizes_[n]));
    offset += carry_sizes_[n++];
  }
  carry_sizes_.erase(carry_sizes_.begin(), carry_sizes_.begin() + static_cast<std::ptrdiff_t>(n));
  carry_bytes_.erase(carry_bytes_.begin(), carry_bytes_.begin() + static_cast<std::ptrdiff_t>(offset));
  settle(t);
  advance_ack(t);
  return fill;
}

void InputWindow::reset_last() {
  std::fill(last_.begin(), last_.end(), std::uint8_t{0});
  carry_bytes_.clear();
  carry_sizes_.clear();
  taken_.clear();
}

void InputWindow::settle(Tick t) { ack_ = std::max(ack_, t); }

void InputWindow::advance_ack(Tick next_tick) {
  while (ring_[(ack_ + 1) % kSize].tick == ack_ + 1 && ack_ + 1 < next_tick + kSize) ++ack_;
}

}  // namespace lockstep
