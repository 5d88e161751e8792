// BusiestSources: the source of most of a window's drops is named among any number of others,
// and a window spread evenly over many sources says so instead of naming a "busiest" one.
#include <doctest/doctest.h>

#include <arpa/inet.h>

#include "lockstep/busiest_sources.hpp"

using lockstep::BusiestSources;

namespace {
std::uint32_t ip(std::uint32_t host_order) { return htonl(host_order); }
}  // namespace

TEST_SUITE("net/busiest_sources") {
  TEST_CASE("a source sending a fifth of the datagrams among 5000 others is named, with a lower bound") {
    BusiestSources s;
    const std::uint32_t heavy = ip(0x0A000007);  // 10.0.0.7
    std::uint64_t sent = 0;
    for (std::uint32_t i = 0; i < 100'000; ++i) {
      if (i % 5 == 0) {
        s.note(heavy);
        ++sent;
      } else {
        s.note(ip(0xC0A80000 + i % 5000));
      }
    }
    CHECK(s.total() == 100'000);
    const auto [who, count] = s.busiest();
    CHECK(who == heavy);
    CHECK(count <= sent);
    CHECK(count + s.total() / (BusiestSources::kSlots + 1) >= sent);  // Misra-Gries' bound
    CHECK(s.describe().find("the most from 10.0.0.7 (at least ") == 0);
  }
  TEST_CASE("an even spread over 200 sources names none as the busiest, and a cleared window is empty") {
    BusiestSources s;
    for (std::uint32_t i = 0; i < 20'000; ++i) s.note(ip(0x7F000101 + i % 200));
    CHECK(s.describe().find("from many sources, 127.0.") == 0);
    s.clear();
    CHECK(s.describe().empty());
    CHECK(s.total() == 0);
  }
}
