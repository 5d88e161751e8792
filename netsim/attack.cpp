#include "attack.hpp"

#include <cstring>

#include "lockstep/datagram_check.hpp"

namespace lockstep::netsim {
namespace {

// ENet 1.3's wire constants (enet/protocol.h).
constexpr std::uint16_t kHeaderSentTime = 0x8000, kHeaderCompressed = 0x4000;
constexpr std::uint8_t kCommandMask = 0x0f, kFlagUnsequenced = 0x40;
constexpr std::uint8_t kConnect = 2, kVerifyConnect = 3, kSendReliable = 6, kSendUnreliable = 7, kSendFragment = 8,
                       kSendUnsequenced = 9, kSendUnreliableFragment = 12;
constexpr std::size_t kConnectIdAt = 40;  // in both CONNECT and VERIFY_CONNECT
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

// Calls f(number, command offset, data offset, data size) for each command; false when malformed.
template <class F>
bool each_command(std::span<const std::uint8_t> d, F&& f) {
  const std::size_t check = check_field_at(d);
  if (check == 0 || (be16(d.data()) & kHeaderCompressed)) return false;
  std::size_t at = check + kCheckBytes;
  while (at + 4 <= d.size()) {
    const std::uint8_t number = d[at] & kCommandMask;
    const std::size_t size = command_size(number);
    if (size == 0 || at + size > d.size()) return false;
    std::size_t data = 0;
    if (number == kSendReliable) data = be16(&d[at + 4]);
    else if (number == kSendUnreliable || number == kSendUnsequenced) data = be16(&d[at + 6]);
    else if (number == kSendFragment || number == kSendUnreliableFragment) data = be16(&d[at + 8]);
    if (at + size + data > d.size()) return false;
    f(number, at, at + size, data);
    at += size + data;
  }
  return true;
}

}  // namespace

std::vector<Send> sends_of(std::span<const std::uint8_t> d) {
  std::vector<Send> out;
  const bool whole = each_command(d, [&](std::uint8_t number, std::size_t at, std::size_t data_at, std::size_t data) {
    if (number == kSendUnsequenced) out.push_back({Send::Kind::Unsequenced, data_at, data, be16(&d[at + 4])});
    else if (number == kSendReliable || number == kSendFragment) out.push_back({Send::Kind::Reliable, data_at, data, 0});
    else if (number == kSendUnreliable || number == kSendUnreliableFragment) out.push_back({Send::Kind::Other, data_at, data, 0});
  });
  return whole ? out : std::vector<Send>{};
}

std::optional<std::uint32_t> connect_id_of(std::span<const std::uint8_t> d) {
  std::optional<std::uint32_t> id;
  each_command(d, [&](std::uint8_t number, std::size_t at, std::size_t, std::size_t) {
    if (number == kConnect || number == kVerifyConnect) {
      std::uint32_t v;
      std::memcpy(&v, &d[at + kConnectIdAt], sizeof v);
      id = v;
    }
  });
  return id;
}

std::vector<std::uint8_t> forge_unsequenced(std::uint16_t peer_field, std::uint16_t group, std::span<const std::uint8_t> payload,
                                            std::uint32_t connect_id) {
  const std::uint16_t peer = peer_field & ~(kHeaderSentTime | kHeaderCompressed);
  std::vector<std::uint8_t> d = {static_cast<std::uint8_t>(peer >> 8), static_cast<std::uint8_t>(peer), 0, 0, 0, 0,
                                 kSendUnsequenced | kFlagUnsequenced, 1, 0, 0,
                                 static_cast<std::uint8_t>(group >> 8), static_cast<std::uint8_t>(group),
                                 static_cast<std::uint8_t>(payload.size() >> 8), static_cast<std::uint8_t>(payload.size())};
  const std::size_t head = d.size();
  d.resize(head + payload.size());
  if (!payload.empty()) std::memcpy(d.data() + head, payload.data(), payload.size());
  std::memcpy(d.data() + 2, &connect_id, kCheckBytes);  // the seed, then the check over it
  const std::uint32_t check = keyless_check(d);
  std::memcpy(d.data() + 2, &check, kCheckBytes);
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

void Attacker::flip(std::vector<std::uint8_t>& datagram, const Send& s) {
  datagram[s.payload_at + rng_.below(static_cast<std::uint32_t>(s.payload_size))] ^= static_cast<std::uint8_t>(1u << rng_.below(8));
}

std::vector<std::vector<std::uint8_t>> Attacker::on_datagram(std::vector<std::uint8_t>& datagram) {
  std::vector<std::vector<std::uint8_t>> extra;
  if (const auto id = connect_id_of(datagram)) connect_id_ = *id;
  const auto sends = sends_of(datagram);
  const Send* control = nullptr;
  const Send* play = nullptr;
  for (const Send& s : sends) {
    if (s.payload_size == 0) continue;
    if (s.kind == Send::Kind::Reliable && !control) control = &s;
    if (s.kind == Send::Kind::Unsequenced) play = &s;  // the last: its group is the newest
  }
  if (control && roll(cfg_.tamper_control_pct >= 0 ? cfg_.tamper_control_pct : cfg_.tamper_pct)) {
    flip(datagram, *control);
    ++counters_.tampered_control;
    return extra;
  }
  if (!play) return extra;
  const std::uint16_t peer = be16(datagram.data());
  if (play->group != latest_group_) used_ = 0;
  latest_group_ = play->group;
  const std::vector<std::uint8_t> message(datagram.begin() + static_cast<std::ptrdiff_t>(play->payload_at),
                                          datagram.begin() + static_cast<std::ptrdiff_t>(play->payload_at + play->payload_size));
  if (roll(cfg_.replay_pct) && seen_.size() >= 50) {
    if (const auto g = fresh_group()) {
      extra.push_back(forge_unsequenced(peer, *g, seen_[rng_.below(static_cast<std::uint32_t>(seen_.size() / 2))], connect_id_));
      ++counters_.replayed;
    }
  }
  if (roll(cfg_.inject_pct)) {
    if (const auto g = fresh_group()) {
      std::vector<std::uint8_t> junk(message.size());
      for (auto& b : junk) b = static_cast<std::uint8_t>(rng_.next_u32());
      extra.push_back(forge_unsequenced(peer, *g, junk, connect_id_));
      ++counters_.injected;
    }
  }
  seen_.push_back(message);
  if (seen_.size() > 200) seen_.pop_front();
  if (roll(cfg_.tamper_pct)) {
    flip(datagram, *play);
    ++counters_.tampered;
  }
  return extra;
}

}  // namespace lockstep::netsim
