// The datagram check (docs/PROTOCOL.md §1.1, common/net/src/datagram_check.cpp): its two forms
// against vectors computed outside lockstep (Python's zlib and hashlib, PyNaCl's siphash24; the
// script is in PROTOCOL.md), and a real ENet host refusing a datagram whose check fails before
// ENet reads any of it.
#include <doctest/doctest.h>
#include <enet/enet.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/transport.hpp"
#include "net/enet_wire.hpp"

using namespace lockstep;

namespace {

std::vector<std::uint8_t> from_hex(const char* hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
    unsigned v = 0;
    std::sscanf(hex + i, "%2x", &v);
    out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}
std::vector<std::uint8_t> wire(std::uint32_t check) {
  std::vector<std::uint8_t> out(4);
  std::memcpy(out.data(), &check, 4);
  return out;
}

// The vector of PROTOCOL.md §1.1: a 40-byte datagram with the sent-time flag, its check field
// holding the seed 11 22 33 44, and a connection key of the bytes 0..31.
const char* const kDatagram = "800082831122334488898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7";

}  // namespace

TEST_SUITE("net/datagram_check") {
  TEST_CASE("the check field follows the peer field and the sent time when flagged") {
    CHECK(check_field_at(from_hex("8000aabbccdd")) == 0);       // flagged: 4 bytes of header, no room for the field
    CHECK(check_field_at(from_hex("8000aabbccddeeff")) == 4);
    CHECK(check_field_at(from_hex("0001ccddeeff")) == 2);
    CHECK(check_field_at(from_hex("0001ccddee")) == 0);
    CHECK(check_field_at({}) == 0);
  }

  TEST_CASE("the keyless and keyed checks and the datagram key match the vectors") {
    const auto d = from_hex(kDatagram);
    CHECK(wire(keyless_check(d)) == from_hex("44372266"));
    ConnectionKeys keys;
    for (std::size_t i = 0; i < keys.send.size(); ++i) keys.send[i] = static_cast<std::uint8_t>(i);
    keys.receive = keys.send;
    keys.receive[0] ^= 1;
    const DatagramKeys dk = datagram_keys(keys);
    CHECK(std::vector<std::uint8_t>(dk.send.begin(), dk.send.end()) == from_hex("ba264274c2736d7df72cd24c4c22705f"));
    CHECK(dk.receive != dk.send);  // each direction its own key
    CHECK(wire(keyed_check(dk.send, d)) == from_hex("969e95c2"));
  }

  TEST_CASE("one flipped bit anywhere changes both checks") {
    const auto d = from_hex(kDatagram);
    const std::array<std::uint8_t, 16> key{1, 2, 3};
    const std::uint32_t keyless = keyless_check(d), keyed = keyed_check(key, d);
    for (std::size_t bit = 0; bit < d.size() * 8; ++bit) {
      auto altered = d;
      altered[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      CHECK(keyless_check(altered) != keyless);
      CHECK(keyed_check(key, altered) != keyed);
    }
  }

  TEST_CASE("an ENet host refuses and counts a connection request whose check fails, and answers the same request intact") {
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(server->port());
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    const std::vector<std::uint8_t> d = testing::connect_datagram(0x4242);  // its check seeded with 0
    auto altered = d;
    altered[20] ^= 0x10;
    const auto exchange = [&](const std::vector<std::uint8_t>& datagram) {
      sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      std::size_t answers = 0;
      for (const std::int64_t until = monotonic_ns() + 200'000'000; monotonic_ns() < until;) {
        while (server->poll().type != NetEvent::Type::None) {
        }
        std::uint8_t buf[2048];
        while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) ++answers;
        pollfd p{server->fd(), POLLIN, 0};
        ::poll(&p, 1, 2);
      }
      return answers;
    };
    CHECK(exchange(altered) == 0);
    CHECK(server->traffic().datagrams_refused == 1);
    CHECK(exchange(d) == 1);
    CHECK(server->traffic().datagrams_refused == 1);
    close(fd);
  }
}
