// The sources that sent the most of something (dropped datagrams, refused connections) in a
// window, found in constant memory whatever the number of sources: the Misra-Gries summary with
// kSlots counters. Any source that sent more than a kSlots+1-th of the window's total is among
// the kept ones, its count low by at most total / (kSlots + 1). For one log line per window that
// names the flood's source, not one line per datagram.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <arpa/inet.h>

namespace lockstep {

class BusiestSources {
 public:
  static constexpr std::size_t kSlots = 8;

  /// One more from `ip` (an IPv4 address in network order).
  void note(std::uint32_t ip) {
    ++total_;
    Slot* free = nullptr;
    for (Slot& s : slots_) {
      if (s.count != 0 && s.ip == ip) {
        ++s.count;
        return;
      }
      if (s.count == 0 && !free) free = &s;
    }
    if (free) {
      *free = {ip, 1};
      return;
    }
    for (Slot& s : slots_) --s.count;  // none free: every count falls by one (this one's too)
  }
  [[nodiscard]] std::uint64_t total() const { return total_; }
  /// The source kept with the highest count, and that count (a lower bound); {0, 0} when none.
  [[nodiscard]] std::pair<std::uint32_t, std::uint64_t> busiest() const {
    std::pair<std::uint32_t, std::uint64_t> best{0, 0};
    for (const Slot& s : slots_)
      if (s.count > best.second) best = {s.ip, s.count};
    return best;
  }
  /// "the most from 1.2.3.4 (at least N of T)" when the busiest source's count (a lower bound) is
  /// at least a 2(kSlots+1)-th of the window's total, else "from many sources, 1.2.3.4 among
  /// them" (no one source stands out); "" for none.
  [[nodiscard]] std::string describe() const {
    const auto [ip, count] = busiest();
    if (count == 0) return "";
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &ip, text, sizeof text);
    if (count * 2 * (kSlots + 1) < total_) return "from many sources, " + std::string(text) + " among them";
    return "the most from " + std::string(text) + " (at least " + std::to_string(count) + " of " +
           std::to_string(total_) + ")";
  }
  void clear() { *this = BusiestSources(); }

 private:
  struct Slot {
    std::uint32_t ip = 0;
    std::uint64_t count = 0;
  };
  std::array<Slot, kSlots> slots_{};
  std::uint64_t total_ = 0;
};

}  // namespace lockstep
