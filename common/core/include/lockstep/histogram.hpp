// A fixed-size histogram of durations in microseconds, for lateness and latency percentiles
// over runs of any length without growing memory.
#pragma once

#include <array>
#include <cstdint>

#include "lockstep/export.h"

namespace lockstep {

/// Buckets: 1 us wide below 2 ms, 100 us wide below 200 ms, 1 ms wide below 5 s (round trips
/// of far players), then one overflow bucket.
/// Negative values count in bucket 0.
class LOCKSTEP_API Histogram {
 public:
  void add_us(std::int64_t us);
  [[nodiscard]] std::uint64_t count() const { return count_; }
  /// The p-th percentile (0..100) in microseconds: the upper edge of the bucket it falls in.
  [[nodiscard]] double percentile_us(double p) const;
  [[nodiscard]] std::int64_t max_us() const { return max_us_; }

 private:
  static constexpr int kFine = 2000, kCoarse = 1980, kWide = 4800;
  static constexpr std::int64_t kCoarseEnd = kFine + std::int64_t{kCoarse} * 100;  // 200 ms
  std::array<std::uint64_t, kFine + kCoarse + kWide + 1> buckets_{};
  std::uint64_t count_ = 0;
  std::int64_t max_us_ = 0;
};

}  // namespace lockstep
