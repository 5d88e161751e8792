#include "lockstep/histogram.hpp"

#include <algorithm>

namespace lockstep {

void Histogram::add_us(std::int64_t us) {
  if (count_ == 0 || us > max_us_) max_us_ = us;
  ++count_;
  std::size_t b;
  if (us < kFine) b = static_cast<std::size_t>(std::max<std::int64_t>(us, 0));
  else if (us < kCoarseEnd) b = static_cast<std::size_t>(kFine + (us - kFine) / 100);
  else if (us < kCoarseEnd + std::int64_t{kWide} * 1000) b = static_cast<std::size_t>(kFine + kCoarse + (us - kCoarseEnd) / 1000);
  else b = kFine + kCoarse + kWide;
  ++buckets_[b];
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
