#include "attack.hpp"

#include <cstring>

namespace lockstep::netsim {
namespace {

// ENet 1.3's wire constants (enet/protocol.h).
constexpr std::uint16_t kHeaderSentTime = 0x8000, kHeaderCompressed = 0x4000;
constexpr std::uint8_t kCommandMask = 0x0f, kFlagUnsequenced = 0x40;
constexpr std::uint8_t kSendUnsequenced = 9;
constexpr std::size_t kUnsequencedWindow = 1024;

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

// The size of a command of each number, without its data (0: unknown).
std::size_t command_size(std::uint8_t number) {
  switch (number) {
    case 1: return 8;    // acknowledge
    case 2: return 48;   // connect
    case 3: return 44;   // verify connect
    case 4: return 8;    // disconnect
    case 5: return 4;    // ping
    case 6: return 6;    // send reliable
    case 7: return 8;    // send unreliable
    case 8: return 24;   // send fragment
    case 9: return 8;    // send unsequenced
    case 10: return 12;  // bandwidth limit
    case 11: return 16;  // throttle configure
    case 12: return 24;  // send unreliable fragment
    default: return 0;
  }
}

}  // namespace

std::vector<UnsequencedSend> unsequenced_sends(std::span<const std::uint8_t> d) {
  std::vector<UnsequencedSend> out;
  if (d.size() < 2) return out;
  const std::uint16_t peer = be16(d.data());
  if (peer & kHeaderCompressed) return out;
  std::size_t at = (peer & kHeaderSentTime) ? 4 : 2;
  while (at + 4 <= d.size()) {
    const std::uint8_t number = d[at] & kCommandMask;
    const std::size_t size = command_size(number);
    if (size == 0 || at + size > d.size()) return {};
    std::size_t data = 0;
    if (number == 6) data = be16(&d[at + 4]);
    else if (number == 7 || number == 9) data = be16(&d[at + 6]);
    else if (number == 8 || number == 12) data = be16(&d[at + 8]);
    if (at + size + data > d.size()) return {};
    if (number == kSendUnsequenced) out.push_back({at + size, data, be16(&d[at + 4])});
    at += size + data;
  }
  return out;
}

std::vector<std::uint8_t> forge_unsequenced(std::uint16_t peer_field, std::uint16_t group, std::span<const std::uint8_t> payload) {
  const std::uint16_t peer = peer_field & ~(kHeaderSentTime | kHeaderCompressed);
  const std::uint8_t head[10] = {static_cast<std::uint8_t>(peer >> 8), static_cast<std::uint8_t>(peer),
                                 kSendUnsequenced | kFlagUnsequenced, 1, 0, 0,
                                 static_cast<std::uint8_t>(group >> 8), static_cast<std::uint8_t>(group),
                                 static_cast<std::uint8_t>(payload.size() >> 8), static_cast<std::uint8_t>(payload.size())};
  std::vector<std::uint8_t> d(sizeof head + payload.size());
  std::memcpy(d.data(), head, sizeof head);
  if (!payload.empty()) std::memcpy(d.data() + sizeof head, payload.data(), payload.size());
  return d;
}

std::optional<std::uint16_t> Attacker::fresh_group() {
  // ENet keeps a bit per group in a window of 1024 from a multiple of 1024; a group further on
  // would move the window and make the sender's next messages look old. Stay inside it.
  const std::uint16_t next = static_cast<std::uint16_t>(latest_group_ + 32 + used_);
  if (next / kUnsequencedWindow != latest_group_ / kUnsequencedWindow || next < latest_group_) return std::nullopt;
  ++used_;
  return next;
}

std::vector<std::vector<std::uint8_t>> Attacker::on_datagram(std::vector<std::uint8_t>& datagram) {
  std::vector<std::vector<std::uint8_t>> extra;
  const auto sends = unsequenced_sends(datagram);
  if (sends.empty()) return extra;
  const std::uint16_t peer = be16(datagram.data());
  if (sends.back().group != latest_group_) used_ = 0;
  latest_group_ = sends.back().group;
  const UnsequencedSend& s = sends.front();
  const std::vector<std::uint8_t> message(datagram.begin() + static_cast<std::ptrdiff_t>(s.payload_at),
                                          datagram.begin() + static_cast<std::ptrdiff_t>(s.payload_at + s.payload_size));
  if (roll(cfg_.replay_pct) && seen_.size() >= 50) {
    if (const auto g = fresh_group()) {
      extra.push_back(forge_unsequenced(peer, *g, seen_[rng_.below(static_cast<std::uint32_t>(seen_.size() / 2))]));
      ++counters_.replayed;
    }
  }
  if (roll(cfg_.inject_pct)) {
    if (const auto g = fresh_group()) {
      std::vector<std::uint8_t> junk(message.size());
      for (auto& b : junk) b = static_cast<std::uint8_t>(rng_.next_u32());
      extra.push_back(forge_unsequenced(peer, *g, junk));
      ++counters_.injected;
    }
  }
  seen_.push_back(message);
  if (seen_.size() > 200) seen_.pop_front();
  if (roll(cfg_.tamper_pct) && s.payload_size > 0) {
    datagram[s.payload_at + rng_.below(static_cast<std::uint32_t>(s.payload_size))] ^=
        static_cast<std::uint8_t>(1u << rng_.below(8));
    ++counters_.tampered;
  }
  return extra;
}

}  // namespace lockstep::netsim
