// The seeded fault model behind lockstep-netsim: for each datagram, whether it is lost,
// duplicated, and how long each copy is held. Pure: the same seed gives the same faults.
#pragma once

#include <cstdint>

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

}  // namespace lockstep
