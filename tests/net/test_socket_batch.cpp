// The UDP socket read and written in batches (common/net/src/socket_batch.cpp), on real sockets,
// and the transport that hands ENet its datagrams from it: one read takes every datagram waiting,
// each with the kernel's receive stamp, and what a round sends goes out in one write.
#include <doctest/doctest.h>
#include <enet/enet.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/socket_batch.hpp"
#include "lockstep/transport.hpp"
#include "enet_transport.hpp"
#include "net/connected_transports.hpp"

using namespace lockstep;

namespace {

// A UDP socket bound to 127.0.0.1 on a free port.
struct Udp {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in at{};
  Udp() {
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0);
    socklen_t n = sizeof at;
    getsockname(fd, reinterpret_cast<sockaddr*>(&at), &n);
  }
  ~Udp() { close(fd); }
  void send_to(const Udp& other, const std::vector<std::uint8_t>& bytes) const {
    REQUIRE(sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&other.at), sizeof other.at) ==
            static_cast<ssize_t>(bytes.size()));
  }
  std::vector<std::uint8_t> receive() const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return {};
    std::vector<std::uint8_t> b(8192);
    const ssize_t n = recv(fd, b.data(), b.size(), 0);
    b.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return b;
  }
};

// The kernel turns receive stamping on a moment after a socket first asks for it (and off after the
// last such socket closes); until then a datagram is stamped when it is read. Waits until a
// datagram to `b` is stamped on arrival.
void await_stamping(const Udp& a, const Udp& b, SocketBatch& batch) {
  for (const std::int64_t until = monotonic_ns() + 2'000'000'000; monotonic_ns() < until;) {
    a.send_to(b, {0});
    usleep(3'000);
    const std::int64_t read_at = monotonic_ns();
    batch.begin_round();
    SocketBatch::Datagram d;
    bool early = false;
    while (batch.next(&d) == 1) early = d.arrived_ns != 0 && d.arrived_ns < read_at - 2'000'000;
    if (early) return;
  }
  FAIL("the kernel never stamped a datagram on arrival");
}

}  // namespace

TEST_SUITE("net/socket_batch") {
  TEST_CASE("one read takes every datagram waiting, in order and stamped, and drops empty and oversized ones") {
    Udp a, b;
    SocketBatch batch(b.fd);
    await_stamping(a, b, batch);
    const SocketBatch::Counts warm = batch.counts();
    const std::int64_t before = monotonic_ns();
    const std::vector<std::uint8_t> first{1, 2, 3}, second{4}, third(SocketBatch::kMaxDatagram, 7);
    a.send_to(b, first);
    usleep(5'000);
    a.send_to(b, {});  // empty: ENet would stop reading at it
    a.send_to(b, second);
    a.send_to(b, std::vector<std::uint8_t>(SocketBatch::kMaxDatagram + 1, 9));  // too long for any MTU
    usleep(5'000);
    a.send_to(b, third);
    usleep(20'000);
    const std::int64_t after = monotonic_ns();

    batch.begin_round();
    std::vector<SocketBatch::Datagram> got;
    std::vector<std::vector<std::uint8_t>> bytes;
    SocketBatch::Datagram d;
    while (batch.next(&d) == 1) {
      got.push_back(d);
      bytes.emplace_back(d.bytes.begin(), d.bytes.end());
    }
    REQUIRE(bytes.size() == 3);
    CHECK(bytes[0] == first);
    CHECK(bytes[1] == second);
    CHECK(bytes[2] == third);
    CHECK(got[0].from.sin_port == a.at.sin_port);
    CHECK(batch.counts().reads - warm.reads == 1);  // all of them in one call, which found the socket empty after them
    CHECK(batch.counts().datagrams_read - warm.datagrams_read == 5);
    CHECK(batch.counts().empty_in - warm.empty_in == 1);
    CHECK(batch.counts().oversized_in - warm.oversized_in == 1);
    // The kernel's stamps: when each arrived, not when it was read (all at once, after `after`).
    for (const auto& g : got) {
      CHECK(g.arrived_ns >= before - 1'000'000);  // the clocks are carried over to within a millisecond
      CHECK(g.arrived_ns <= after + 1'000'000);
    }
    CHECK(got[1].arrived_ns - got[0].arrived_ns >= 4'000'000);
    CHECK(got[2].arrived_ns - got[1].arrived_ns >= 4'000'000);

    // The socket was found empty: the round asks it nothing more; a new round reads it again.
    CHECK(batch.next(&d) == 0);
    CHECK(batch.counts().reads - warm.reads == 1);
    CHECK(batch.drained());
    a.send_to(b, first);
    usleep(5'000);
    CHECK(batch.next(&d) == 0);  // waits for the next round
    batch.begin_round();
    REQUIRE(batch.next(&d) == 1);
    CHECK(std::vector<std::uint8_t>(d.bytes.begin(), d.bytes.end()) == first);
    CHECK(batch.counts().reads - warm.reads == 2);
  }

  TEST_CASE("datagrams queued go out in one write, each whole and to its own address") {
    Udp from, x, y;
    SocketBatch batch(from.fd);
    const std::vector<std::uint8_t> head{1, 2}, body{3, 4, 5};
    const iovec parts[] = {{const_cast<std::uint8_t*>(head.data()), head.size()},
                           {const_cast<std::uint8_t*>(body.data()), body.size()}};
    REQUIRE(batch.queue(x.at, parts));
    REQUIRE(batch.queue(y.at, std::span<const iovec>(parts, 1)));
    REQUIRE(batch.queue(x.at, std::span<const iovec>(parts + 1, 1)));
    std::vector<std::uint8_t> too_long(SocketBatch::kMaxDatagram + 1);
    const iovec long_part{too_long.data(), too_long.size()};
    CHECK_FALSE(batch.queue(x.at, std::span<const iovec>(&long_part, 1)));
    CHECK(batch.queued());
    CHECK(batch.counts().writes == 0);  // nothing goes before write()
    batch.write();
    CHECK_FALSE(batch.queued());
    CHECK(batch.counts().writes == 1);
    CHECK(batch.counts().datagrams_written == 3);
    CHECK(x.receive() == std::vector<std::uint8_t>{1, 2, 3, 4, 5});
    CHECK(x.receive() == body);
    CHECK(y.receive() == head);
  }

  TEST_CASE("a transport's round reads its socket once, and each message carries the stamp of its arrival") {
    testing::ConnectedTransports pair;
    Transport* server = pair.server.get();
    Transport* client = pair.client.get();
    NetPeer* to_server = pair.to_server;
    const NetTraffic client_before = client->traffic(), server_before = server->traffic();
    for (std::uint8_t i = 0; i < 3; ++i) {
      client->send(to_server, Channel::Play, std::vector<std::uint8_t>{i});
      client->flush();  // one datagram each, one write each
      usleep(10'000);
    }
    usleep(20'000);
    std::vector<std::int64_t> arrived;
    for (NetEvent ev = server->poll(); ev.type != NetEvent::Type::None; ev = server->poll())
      if (ev.type == NetEvent::Type::Receive) arrived.push_back(ev.arrived_ns);
    REQUIRE(arrived.size() == 3);
    // ENet's datagrams came through the batch (ENet's socket calls are this library's): the three
    // were read by one call, and the round ended without another.
    CHECK(server->traffic().socket_reads - server_before.socket_reads == 1);
    CHECK(client->traffic().socket_writes - client_before.socket_writes == 3);
    CHECK(arrived[0] > 0);
    CHECK(arrived[1] - arrived[0] >= 8'000'000);  // read at once, stamped 10 ms apart
    CHECK(arrived[2] - arrived[1] >= 8'000'000);

    // A round that reads a single datagram: its message, handed out by the service that read it,
    // carries its arrival too.
    client->send(to_server, Channel::Play, std::vector<std::uint8_t>{7});
    client->flush();
    usleep(20'000);
    const std::int64_t read_at = monotonic_ns();
    std::vector<std::int64_t> single;
    for (NetEvent ev = server->poll(); ev.type != NetEvent::Type::None; ev = server->poll())
      if (ev.type == NetEvent::Type::Receive) single.push_back(ev.arrived_ns);
    REQUIRE(single.size() == 1);
    CHECK(single[0] > 0);
    CHECK(single[0] < read_at - 10'000'000);  // when it came, not when it was read
  }

  TEST_CASE("ENet's socket calls reach the library's replacements here, built and linked against one ENet version") {
    std::string why = "unset";
    CHECK(Transport::enet_batching(&why));
    CHECK(why.empty());
    CHECK(enet_linked_version() == ENET_VERSION);
    // What a truncated datagram gives: the linked ENet's own answer (-1 up to 1.3.17, -2 after).
    CHECK(truncated_receive_result() == (enet_linked_version() >= ENET_VERSION_CREATE(1, 3, 18) ? -2 : -1));
  }

  TEST_CASE("a program's own ENet host beside a transport works as with ENet's own socket calls") {
    // The socket calls this library supplies serve every ENet host in the program; a game's own
    // host (not a transport) reads and writes one datagram a call, as ENet's would.
    auto server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    ENetHost* own = enet_host_create(nullptr, 1, 2, 0, 0);
    REQUIRE(own);
    own->checksum = &keyless_check;  // the protocol's datagram check, which the transport requires
    ENetAddress to{};
    enet_address_set_host_ip(&to, "127.0.0.1");
    to.port = server->port();
    ENetPeer* peer = enet_host_connect(own, &to, 2, 0);
    REQUIRE(peer);
    NetPeer* client_of_server = nullptr;
    bool connected = false, got_reply = false;
    std::vector<std::uint8_t> at_server;
    for (const std::int64_t until = monotonic_ns() + 3'000'000'000; !got_reply && monotonic_ns() < until;) {
      for (NetEvent ev = server->poll(); ev.type != NetEvent::Type::None; ev = server->poll()) {
        if (ev.type == NetEvent::Type::Connect) client_of_server = ev.peer;
        if (ev.type == NetEvent::Type::Receive) {
          at_server.assign(ev.data.begin(), ev.data.end());
          server->send(client_of_server, Channel::Control, std::vector<std::uint8_t>{9, 8});
        }
      }
      ENetEvent ev;
      while (enet_host_service(own, &ev, 0) > 0) {
        if (ev.type == ENET_EVENT_TYPE_CONNECT && !connected) {
          connected = true;
          const std::uint8_t hello[] = {1, 2, 3};
          enet_peer_send(peer, 0, enet_packet_create(hello, sizeof hello, ENET_PACKET_FLAG_RELIABLE));
        }
        if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
          got_reply = ev.packet->dataLength == 2 && ev.packet->data[0] == 9;
          enet_packet_destroy(ev.packet);
        }
      }
      usleep(1000);
    }
    CHECK(connected);
    CHECK(at_server == std::vector<std::uint8_t>{1, 2, 3});
    CHECK(got_reply);
    CHECK(server->traffic().socket_reads > 0);  // the transport's side went through its batch
    enet_host_destroy(own);
  }
}
