#include "lockstep/histogram.hpp"

#include <algorithm>

namespace lockstep {

void Histogram::add_us(std::int64_t us) {
  if (count_ == 0 || us > max_us_) max_us_ = us;
  ++count_;
  std::size_t b;
  if (us < kFine) b = static_cast<std::size_t>(std::max<std::int64_t>(us, 0));
  else if (us < kFine + std::int64_t{kCoarse} * 100) b = static_cast<std::size_t>(kFine + (us - kFine) / 100);
  else b = kFine + kCoarse;
  ++buckets_[b];
}

double Histogram::percentile_us(double p) const {
  if (count_ == 0) return 0.0;
  const auto target = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_ - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= target) {
      if (b < kFine) return static_cast<double>(b);
      if (b < kFine + kCoarse) return static_cast<double>(kFine + (b - kFine + 1) * 100);
      return static_cast<double>(max_us_);
    }
  }
  return static_cast<double>(max_us_);
}

}  // namespace lockstep
