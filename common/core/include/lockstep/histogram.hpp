// A fixed-size histogram of durations in microseconds, for lateness and latency percentiles
// over runs of any length without growing memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
  /// The sum of every value added (negative ones as 0), microseconds: with count(), the mean.
  [[nodiscard]] std::int64_t sum_us() const { return sum_us_; }
  /// How many values were at most `us` where `us` is the top of a bucket (any value below 2 ms, one
  /// ending in 99 below 200 ms, in 999 below 5 s); otherwise how many lay below the bucket `us`
  /// falls in: at a round edge such as 5000, the values below it. Cumulative buckets (Prometheus' le).
  [[nodiscard]] std::uint64_t count_at_most(std::int64_t us) const;
  /// count_at_most() of each of `edges` (ascending) into `out`, in one pass over the buckets.
  void counts_at_most(std::span<const std::int64_t> edges, std::span<std::uint64_t> out) const;

 private:
  static constexpr int kFine = 2000, kCoarse = 1980, kWide = 4800;
  static constexpr std::int64_t kCoarseEnd = kFine + std::int64_t{kCoarse} * 100;  // 200 ms
  static constexpr std::size_t kBuckets = kFine + kCoarse + kWide + 1;
  std::uint64_t count_ = 0;
  std::int64_t max_us_ = 0;
  std::int64_t sum_us_ = 0;
  // Apart from the object (allocated at the first value), so that an object holding a histogram
  // keeps its other fields together: 70 KB inline put them pages apart, and every tick's first
  // touch of each was a cache and TLB miss.
  std::vector<std::uint64_t> buckets_;
  static std::size_t bucket_of(std::int64_t us);
};

}  // namespace lockstep
