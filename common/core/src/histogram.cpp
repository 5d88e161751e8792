// A fixed-size histogram of microseconds: percentiles and cumulative counts (histogram.hpp).
#include "lockstep/histogram.hpp"

#include <algorithm>

namespace lockstep {

std::size_t Histogram::bucket_of(std::int64_t us) {
  if (us < kFine) return static_cast<std::size_t>(std::max<std::int64_t>(us, 0));
  if (us < kCoarseEnd) return static_cast<std::size_t>(kFine + (us - kFine) / 100);
  if (us < kCoarseEnd + std::int64_t{kWide} * 1000) return static_cast<std::size_t>(kFine + kCoarse + (us - kCoarseEnd) / 1000);
  return kFine + kCoarse + kWide;
}

void Histogram::add_us(std::int64_t us) {
  if (count_ == 0 || us > max_us_) max_us_ = us;
  ++count_;
  sum_us_ += std::max<std::int64_t>(us, 0);
  if (buckets_.empty()) buckets_.resize(kBuckets, 0);
  ++buckets_[bucket_of(us)];
}

std::uint64_t Histogram::count_at_most(std::int64_t us) const {
  std::uint64_t n = 0;
  counts_at_most({&us, 1}, {&n, 1});
  return n;
}

void Histogram::counts_at_most(std::span<const std::int64_t> edges, std::span<std::uint64_t> out) const {
  std::size_t i = 0;  // buckets summed so far
  std::uint64_t n = 0;
  for (std::size_t e = 0; e < edges.size() && e < out.size(); ++e) {
    const std::int64_t us = edges[e];
    if (us < 0) {
      out[e] = 0;
      continue;
    }
    // Bucket b holds [its lower edge, the next one's): every bucket up to us's own counts when us
    // is the top of its bucket's range, those below it otherwise.
    const std::size_t b = bucket_of(us);
    const bool whole = b == kBuckets - 1 || bucket_of(us + 1) != b;
    for (const std::size_t end = std::min(b + (whole ? 1 : 0), buckets_.size()); i < end; ++i) n += buckets_[i];
    out[e] = n;
  }
}

double Histogram::percentile_us(double p) const {
  if (count_ == 0) return 0.0;
  const auto target = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_ - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= target) {
      // A bucket's upper bound, never past the largest value seen (which may lie inside it).
      std::int64_t bound = max_us_;
      if (b < kFine) bound = static_cast<std::int64_t>(b);
      else if (b < kFine + kCoarse) bound = static_cast<std::int64_t>(kFine + (b - kFine + 1) * 100);
      else if (b < kFine + kCoarse + kWide) bound = kCoarseEnd + static_cast<std::int64_t>(b - kFine - kCoarse + 1) * 1000;
      return static_cast<double>(std::min(bound, max_us_));
    }
  }
  return static_cast<double>(max_us_);
}

}  // namespace lockstep
