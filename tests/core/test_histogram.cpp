// The latency histogram and percentiles of the summaries (histogram.hpp).
#include <doctest/doctest.h>

#include "lockstep/histogram.hpp"

using namespace lockstep;

TEST_SUITE("core/histogram") {
  TEST_CASE("cumulative counts at bucket edges, and the sum, for Prometheus' buckets") {
    Histogram h;
    for (const std::int64_t us : {-5, 0, 1999, 2000, 2099, 2100, 5000, 250'000, 9'000'000}) h.add_us(us);
    CHECK(h.count_at_most(-1) == 0);
    CHECK(h.count_at_most(0) == 2);  // a negative value counts as 0
    CHECK(h.count_at_most(1998) == 2);
    CHECK(h.count_at_most(1999) == 3);
    CHECK(h.count_at_most(2099) == 5);  // the top of the bucket 2000..2099
    CHECK(h.count_at_most(2100) == 5);  // a round edge: the values below it
    CHECK(h.count_at_most(4999) == 6);
    CHECK(h.count_at_most(5000) == 6);
    CHECK(h.count_at_most(5099) == 7);
    CHECK(h.count_at_most(1'000'000) == 8);
    CHECK(h.count_at_most(std::int64_t{1} << 40) == 9);  // the overflow bucket
    CHECK(h.sum_us() == 0 + 1999 + 2000 + 2099 + 2100 + 5000 + 250'000 + 9'000'000);
  }

  TEST_CASE("the buckets live apart from the object, which stays small, and with no value every answer is 0") {
    // An object holding a histogram keeps its other fields together (70 KB of buckets inline put
    // them pages apart, a cache and TLB miss each a tick).
    CHECK(sizeof(Histogram) <= 64);
    const Histogram empty;
    CHECK(empty.count() == 0);
    CHECK(empty.percentile_us(99) == 0.0);
    CHECK(empty.count_at_most(5000) == 0);
    std::int64_t edges[] = {0, 2099, std::int64_t{1} << 40};
    std::uint64_t out[] = {7, 7, 7};
    empty.counts_at_most(edges, out);
    CHECK((out[0] == 0 && out[1] == 0 && out[2] == 0));
    Histogram h;
    h.add_us(150);
    const Histogram copy = h;  // its own buckets
    h.add_us(150);
    CHECK(copy.count_at_most(150) == 1);
    CHECK(h.count_at_most(150) == 2);
  }

  TEST_CASE("the histogram reports percentiles and the maximum") {
    Histogram h;
    for (int i = 1; i <= 100; ++i) h.add_us(i);
    h.add_us(50'000);
    CHECK(h.count() == 101);
    CHECK(h.percentile_us(50) == doctest::Approx(51));
    CHECK(h.percentile_us(100) >= 50'000);
    CHECK(h.max_us() == 50'000);
  }

  TEST_CASE("no percentile exceeds the maximum, though the bucket it falls in reaches past it") {
    // Past 2 ms the buckets are 100 us wide, past 200 ms 1 ms wide: a bucket's upper bound may
    // lie beyond every value in it.
    for (const std::int64_t top : {2'001, 2'450, 150'050, 250'001, 4'000'500}) {
      CAPTURE(top);
      Histogram h;
      for (int i = 0; i < 98; ++i) h.add_us(10);
      h.add_us(top - 1);
      h.add_us(top);
      for (const double p : {50.0, 99.0, 99.9, 100.0}) CHECK(h.percentile_us(p) <= static_cast<double>(h.max_us()));
      CHECK(h.percentile_us(100) == doctest::Approx(static_cast<double>(top)));
    }
  }

}
