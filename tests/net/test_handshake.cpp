// ENet's handshake as the UDP transport runs it (common/net/src/transport.cpp), on real sockets:
// a requester that never acknowledges the answer (a forged source) draws no more bytes than it
// sent, a request that comes again is answered again, and a lost acknowledgement is recovered
// when the requester speaks on the connection. The requester is a plain UDP socket that writes
// ENet's CONNECT by hand, as an attacker would.
#include <doctest/doctest.h>
#include <enet/enet.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/transport.hpp"
#include "net/connected_transports.hpp"
#include "net/enet_wire.hpp"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

// A UDP socket on 127.0.0.x that speaks to a transport's port.
struct RawSocket {
  int fd = -1;
  sockaddr_in to{};
  std::size_t sent = 0, received = 0, datagrams_received = 0;
  std::vector<std::uint8_t> last;

  RawSocket(const char* from_ip, std::uint16_t port) {
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in me{};
    me.sin_family = AF_INET;
    inet_pton(AF_INET, from_ip, &me.sin_addr);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) == 0);
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  }
  ~RawSocket() { close(fd); }
  void send(const std::vector<std::uint8_t>& d) {
    REQUIRE(sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == static_cast<ssize_t>(d.size()));
    sent += d.size();
  }
  void read_all() {
    std::uint8_t buf[2048];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return;
      received += static_cast<std::size_t>(n);
      ++datagrams_received;
      last.assign(buf, buf + n);
    }
  }
};

// Serve `t` (its events read and dropped) and read `raw` for `ms` milliseconds.
void serve(Transport& t, RawSocket& raw, int ms) {
  const std::int64_t until = monotonic_ns() + std::int64_t{ms} * 1'000'000;
  while (monotonic_ns() < until) {
    while (t.poll().type != NetEvent::Type::None) {
    }
    raw.read_all();
    pollfd p{t.fd(), POLLIN, 0};
    ::poll(&p, 1, 2);
  }
}

}  // namespace

TEST_SUITE("net/handshake") {
  TEST_CASE("a connection request that is never acknowledged draws one answer, no more bytes than it carried") {
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    RawSocket raw("127.0.0.71", server->port());
    raw.send(connect_datagram(0x1234));
    serve(*server, raw, 3000);  // ENet alone would resend its answer after 0.5, 1.5 s and later
    CHECK(raw.datagrams_received == 1);
    CHECK(raw.received <= raw.sent);
  }

  TEST_CASE("a request that comes again is answered again, one answer for each") {
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    RawSocket raw("127.0.0.72", server->port());
    for (int i = 0; i < 4; ++i) {
      raw.send(connect_datagram(0x5678));
      serve(*server, raw, 150);
    }
    CHECK(raw.datagrams_received == 4);
    CHECK(raw.received <= raw.sent);
  }

  TEST_CASE("a lost acknowledgement: what the requester sends on the connection draws the answer again, while its bytes pay") {
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    RawSocket raw("127.0.0.73", server->port());
    raw.send(connect_datagram(0x9abc));
    serve(*server, raw, 100);
    REQUIRE(raw.datagrams_received == 1);
    // The answer names the slot the server gave the request: later datagrams are addressed to it.
    ENetProtocolVerifyConnect v{};
    REQUIRE(raw.last.size() >= kConnectAt + sizeof v);
    std::memcpy(&v, raw.last.data() + kConnectAt, sizeof v);
    const std::uint16_t slot = ntohs(v.outgoingPeerID);
    const auto on_slot = [&](std::size_t bytes) {  // a join on its way, as the server sees it: bytes on the slot
      std::vector<std::uint8_t> d(bytes, 0);
      const std::uint16_t header = htons(slot);
      std::memcpy(d.data(), &header, 2);
      put_check(d, 0x9abc);
      return d;
    };
    for (int i = 0; i < 3; ++i) {
      raw.send(on_slot(60));
      serve(*server, raw, 150);
    }
    CHECK(raw.datagrams_received == 4);
    // Small datagrams pay for an answer (52 bytes) only together: three of 60 bytes left 24 of
    // credit, one of 16 more is not enough, two are.
    const std::size_t before = raw.datagrams_received;
    const std::vector<std::uint8_t> small = on_slot(16);
    raw.send(small);
    serve(*server, raw, 150);
    CHECK(raw.datagrams_received == before);
    raw.send(small);
    serve(*server, raw, 150);
    CHECK(raw.datagrams_received == before + 1);
    CHECK(raw.received <= raw.sent);
  }

  TEST_CASE("a handshake left half-open is closed after five seconds") {
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    RawSocket raw("127.0.0.74", server->port());
    raw.send(connect_datagram(0xdef0));
    serve(*server, raw, 5600);
    CHECK(server->handshakes_cut() == 1);
  }
}

// ENet stops reading its socket at an empty datagram as if the socket were empty. poll() reads
// the socket once a round and takes the queued events after; a datagram behind an empty one
// (anyone can send one) must still come in the same round, not at the next wake.
TEST_SUITE("net/poll") {
  TEST_CASE("one round of poll() takes every datagram waiting, past an empty one") {
    ConnectedTransports pair;
    Transport* server = pair.server.get();
    Transport* client = pair.client.get();
    NetPeer* to_server = pair.to_server;
    RawSocket raw("127.0.0.75", server->port());
    const std::vector<std::uint8_t> a{1, 2, 3}, b{4, 5, 6};
    client->send(to_server, Channel::Play, a);
    client->flush();
    usleep(20'000);
    raw.send({});  // the empty datagram, between the two messages
    usleep(20'000);
    client->send(to_server, Channel::Play, b);
    client->flush();
    usleep(50'000);  // all three wait in the server's socket
    std::vector<std::vector<std::uint8_t>> got;
    for (NetEvent ev = server->poll(); ev.type != NetEvent::Type::None; ev = server->poll())
      if (ev.type == NetEvent::Type::Receive) got.emplace_back(ev.data.begin(), ev.data.end());
    REQUIRE(got.size() == 2);
    CHECK(got[0] == a);
    CHECK(got[1] == b);
  }
}
