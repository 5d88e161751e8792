// Network faults in user space, behind lockstep-netsim and the in-process lossy links of the
// tests: a seeded model of each datagram's fate (lost, duplicated, how long each copy is held),
// and a relay that queues datagrams of many flows by their due time. Pure: no sockets, no clock;
// the same seed and the same datagrams give the same faults.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <vector>

#include "lockstep/rng.hpp"

namespace lockstep {

struct FaultConfig {
  double loss_pct = 0;        ///< datagrams dropped, percent
  double duplicate_pct = 0;   ///< datagrams sent twice, percent
  double reorder_pct = 0;     ///< datagrams held back past later ones, percent
  std::int64_t delay_ns = 0;  ///< base one-way delay
  std::int64_t jitter_ns = 0; ///< uniform +- around the delay (never below zero)
  std::uint64_t seed = 1;
};

/// What happens to one datagram.
struct Fate {
  bool lost = false;
  int copies = 1;                  ///< 1, or 2 when duplicated
  std::int64_t hold_ns[2] = {0, 0};  ///< delay of each copy
  bool reordered = false;
};

class FaultModel {
 public:
  /// `stream` separates independent flows that share a seed (each direction of each client).
  FaultModel(const FaultConfig& config, std::uint64_t stream)
      : cfg_(config), rng_(Rng::seeded(config.seed, stream)) {}

  /// The fate of the next datagram of this flow. Always draws the same number of values, so one
  /// datagram's fate never shifts the pattern of the next.
  Fate next() {
    const float lost = rng_.unit() * 100.0f, dup = rng_.unit() * 100.0f, reo = rng_.unit() * 100.0f;
    const float j0 = rng_.unit(), j1 = rng_.unit(), extra = rng_.unit();
    Fate f;
    f.lost = lost < cfg_.loss_pct;
    f.copies = dup < cfg_.duplicate_pct ? 2 : 1;
    f.reordered = reo < cfg_.reorder_pct;
    const float js[2] = {j0, j1};
    for (int i = 0; i < 2; ++i) {
      std::int64_t d = cfg_.delay_ns + static_cast<std::int64_t>((js[i] * 2.0f - 1.0f) * static_cast<float>(cfg_.jitter_ns));
      if (f.reordered) d += 5'000'000 + static_cast<std::int64_t>(extra * 25'000'000.0f);  // 5..30 ms late
      f.hold_ns[i] = d < 0 ? 0 : d;
    }
    return f;
  }

 private:
  FaultConfig cfg_;
  Rng rng_;
};

/// A relay of datagrams between clients and a server, each client a flow with a fault model per
/// direction. push() takes a datagram in; update() hands out every copy that has come due.
class FaultRelay {
 public:
  enum class Direction { Up, Down };  ///< client -> server, server -> client
  struct Counters {
    std::uint64_t in = 0, out = 0, lost = 0, duplicated = 0, reordered = 0;
    /// Handed out more than kLateNs after they were due: the relay's own process was held up (a
    /// busy machine), so the path was slower than its fault model. Tests discount these.
    std::uint64_t late = 0;
    std::int64_t max_late_ns = 0;
  };
  static constexpr std::int64_t kLateNs = 10'000'000;
  struct Datagram {
    Direction direction = Direction::Up;
    std::size_t flow = 0;
    std::vector<std::uint8_t> bytes;
  };

 private:
  struct Pending {
    std::int64_t due;
    std::uint64_t seq;  // ties keep arrival order
    Datagram datagram;
    bool operator>(const Pending& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  struct Flow {
    FaultModel up, down;
  };
  FaultConfig cfg_;
  std::size_t max_flows_, max_queued_;
  std::vector<Flow> flows_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  Counters up_, down_;

 public:
  explicit FaultRelay(const FaultConfig& config, std::size_t max_flows = 256, std::size_t max_queued = 100'000)
      : cfg_(config), max_flows_(max_flows), max_queued_(max_queued) {}

  /// A new flow (a client seen for the first time); nullopt when max_flows are in use. Flow i's
  /// faults are the same whatever the other flows carry.
  std::optional<std::size_t> add_flow() {
    if (flows_.size() >= max_flows_) return std::nullopt;
    const std::uint64_t i = flows_.size();
    flows_.push_back(Flow{FaultModel(cfg_, 2 * i + 1), FaultModel(cfg_, 2 * i + 2)});
    return flows_.size() - 1;
  }
  /// A datagram that arrived at `now` on `flow` going `direction`. A full queue loses it.
  void push(Direction direction, std::size_t flow, std::span<const std::uint8_t> bytes, std::int64_t now) {
    Counters& c = direction == Direction::Up ? up_ : down_;
    ++c.in;
    const Fate fate = (direction == Direction::Up ? flows_[flow].up : flows_[flow].down).next();
    if (fate.lost || queue_.size() >= max_queued_) {
      ++c.lost;
      return;
    }
    if (fate.copies > 1) ++c.duplicated;
    if (fate.reordered) ++c.reordered;
    for (int i = 0; i < fate.copies; ++i)
      queue_.push(Pending{now + fate.hold_ns[i], seq_++, Datagram{direction, flow, {bytes.begin(), bytes.end()}}});
  }
  /// Hands every datagram due by `now` to `deliver`, in due order. Returns the next due time
  /// (INT64_MAX when nothing is queued).
  std::int64_t update(std::int64_t now, const std::function<void(const Datagram&)>& deliver) {
    while (!queue_.empty() && queue_.top().due <= now) {
      const Datagram& d = queue_.top().datagram;
      Counters& c = d.direction == Direction::Up ? up_ : down_;
      ++c.out;
      const std::int64_t late = now - queue_.top().due;
      if (late > kLateNs) ++c.late;
      c.max_late_ns = std::max(c.max_late_ns, late);
      deliver(d);
      queue_.pop();
    }
    return next_due();
  }
  [[nodiscard]] std::int64_t next_due() const { return queue_.empty() ? INT64_MAX : queue_.top().due; }
  [[nodiscard]] std::size_t flows() const { return flows_.size(); }
  [[nodiscard]] const Counters& up() const { return up_; }
  [[nodiscard]] const Counters& down() const { return down_; }
};

}  // namespace lockstep
