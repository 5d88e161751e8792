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

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
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
std::vector<std::uint8_t> check_bytes(std::uint32_t check) {
  std::vector<std::uint8_t> out(4);
  std::memcpy(out.data(), &check, 4);
  return out;
}

// The vector of PROTOCOL.md §1.1: a 40-byte datagram with the sent-time flag, its check field
// holding the seed 11 22 33 44, and a connection key of the bytes 0..31.
const char* const kDatagram = "800082831122334488898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7";


// A relay between a client and a server transport on loopback, as an attacker on the path sees
// them: it forwards every datagram both ways, keeps what it learns (the connection id of the
// CONNECT, each side's peer field) and can send either side a datagram of its own from the
// address that side expects.
struct PathRelay {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in server{}, client{};
  bool have_client = false;
  std::uint32_t connect_id = 0;
  std::uint16_t to_client_peer = 0, to_server_peer = 0;  // peer fields, flags cleared, session bits kept

  explicit PathRelay(std::uint16_t server_port) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &any.sin_addr);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0);
    server = any;
    server.sin_port = htons(server_port);
  }
  ~PathRelay() { close(fd); }
  PathRelay(const PathRelay&) = delete;
  PathRelay& operator=(const PathRelay&) = delete;
  std::uint16_t port() const {
    sockaddr_in a{};
    socklen_t n = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    return ntohs(a.sin_port);
  }
  static std::uint16_t peer_field(const std::uint8_t* d) {
    return static_cast<std::uint16_t>(((d[0] << 8) | d[1]) & ~(int{ENET_PROTOCOL_HEADER_FLAG_SENT_TIME} | int{ENET_PROTOCOL_HEADER_FLAG_COMPRESSED}));
  }
  void pump() {
    std::uint8_t buf[2048];
    sockaddr_in from{};
    socklen_t n = sizeof from;
    for (ssize_t got; (got = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &n)) > 0; n = sizeof from) {
      const bool from_server = from.sin_port == server.sin_port;
      if (!from_server && !have_client) {
        client = from;
        have_client = true;
        std::memcpy(&connect_id, buf + testing::kConnectAt + offsetof(ENetProtocolConnect, connectID), sizeof connect_id);
      }
      if (got >= 2) (from_server ? to_client_peer : to_server_peer) = peer_field(buf);
      const sockaddr_in& to = from_server ? client : server;
      sendto(fd, buf, static_cast<std::size_t>(got), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    }
  }
  // A play message of its own (an unsequenced command on channel 1, group `group`) with the
  // keyless check of the connection, which ENet would take on a connection without keys.
  void forge(bool to_server, std::uint16_t group) {
    const std::uint16_t peer = to_server ? to_server_peer : to_client_peer;
    std::vector<std::uint8_t> d = {static_cast<std::uint8_t>(peer >> 8), static_cast<std::uint8_t>(peer), 0, 0, 0, 0,
                                   static_cast<std::uint8_t>(int{ENET_PROTOCOL_COMMAND_SEND_UNSEQUENCED} | int{ENET_PROTOCOL_COMMAND_FLAG_UNSEQUENCED}),
                                   1, 0, 0, static_cast<std::uint8_t>(group >> 8), static_cast<std::uint8_t>(group), 0, 4, 'f', 'a', 'k', 'e'};
    testing::put_check(d, connect_id);
    const sockaddr_in& to = to_server ? server : client;
    sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
};

// Runs both transports and the relay for `ms`, and returns the payloads each side received.
struct Heard {
  std::vector<std::string> server, client;
  NetPeer *server_peer = nullptr, *client_peer = nullptr;
};
void run(Transport& server, Transport& client, PathRelay& relay, int ms, Heard& heard) {
  for (const std::int64_t until = monotonic_ns() + std::int64_t{ms} * 1'000'000; monotonic_ns() < until;) {
    for (auto* t : {&server, &client}) {
      for (NetEvent ev = t->poll(); ev.type != NetEvent::Type::None; ev = t->poll()) {
        if (ev.type == NetEvent::Type::Connect) (t == &server ? heard.server_peer : heard.client_peer) = ev.peer;
        if (ev.type == NetEvent::Type::Receive)
          (t == &server ? heard.server : heard.client).emplace_back(ev.data.begin(), ev.data.end());
      }
      t->flush();
    }
    relay.pump();
    pollfd p[3] = {{server.fd(), POLLIN, 0}, {client.fd(), POLLIN, 0}, {relay.fd, POLLIN, 0}};
    ::poll(p, 3, 1);
  }
}

// A server and a client transport connected through a PathRelay, each side's peer at hand.
struct RelayedPair {
  std::unique_ptr<Transport> server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
  std::unique_ptr<Transport> client = Transport::client(TransportLimits{}, nullptr);
  PathRelay relay{server ? server->port() : std::uint16_t{0}};
  Heard heard;

  RelayedPair() {
    REQUIRE(server);
    REQUIRE(client);
    REQUIRE(client->connect("127.0.0.1", relay.port(), nullptr));
    run(*server, *client, relay, 300, heard);
    REQUIRE(heard.server_peer);
    REQUIRE(heard.client_peer);
  }
  // The challenge has gone: the server has the keys; the client derives them next and speaks first.
  void authenticate() {
    DatagramKeys server_keys, client_keys;
    server_keys.send.fill(1);
    server_keys.receive.fill(2);
    client_keys.send = server_keys.receive;
    client_keys.receive = server_keys.send;
    server->authenticate(heard.server_peer, server_keys, /*speaks_first=*/false);
    client->authenticate(heard.client_peer, client_keys, /*speaks_first=*/true);
  }
};
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
    CHECK(check_bytes(keyless_check(d)) == from_hex("44372266"));
    ConnectionKeys keys;
    for (std::size_t i = 0; i < keys.send.size(); ++i) keys.send[i] = static_cast<std::uint8_t>(i);
    keys.receive = keys.send;
    keys.receive[0] ^= 1;
    const DatagramKeys dk = datagram_keys(keys);
    CHECK(std::vector<std::uint8_t>(dk.send.begin(), dk.send.end()) == from_hex("ba264274c2736d7df72cd24c4c22705f"));
    CHECK(dk.receive != dk.send);  // each direction its own key
    CHECK(check_bytes(keyed_check(dk.send, d)) == from_hex("969e95c2"));
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
  // The table of §1.1 on real sockets, through an attacker on the path who writes play messages
  // with the keyless check: the client takes none once it has its keys; the server takes them
  // until the client's first keyed datagram has checked, then none.
  TEST_CASE("a client with its keys takes no keyless datagram, and the server takes them until a keyed one checks") {
    RelayedPair pair;
    auto& [server, client, relay, heard] = pair;
    REQUIRE(relay.connect_id != 0);

    // Before any keys, both sides take the keyless form: the forgeries are delivered.
    relay.forge(/*to_server=*/false, 10);
    relay.forge(/*to_server=*/true, 10);
    run(*server, *client, relay, 100, heard);
    CHECK(heard.client == std::vector<std::string>{"fake"});
    CHECK(heard.server == std::vector<std::string>{"fake"});

    pair.authenticate();
    const std::uint64_t client_refused = client->traffic().datagrams_refused;
    relay.forge(/*to_server=*/false, 20);  // the server has not heard a keyed datagram yet
    relay.forge(/*to_server=*/true, 20);
    for (const std::int64_t until = monotonic_ns() + 100'000'000; monotonic_ns() < until;) {  // nothing sent yet
      for (auto* t : {server.get(), client.get()})
        for (NetEvent ev = t->poll(); ev.type != NetEvent::Type::None; ev = t->poll())
          if (ev.type == NetEvent::Type::Receive) (t == server.get() ? heard.server : heard.client).emplace_back(ev.data.begin(), ev.data.end());
      relay.pump();
      ::poll(nullptr, 0, 1);
    }
    CHECK(heard.client.size() == 1);  // refused: the client takes keyed datagrams only
    CHECK(client->traffic().datagrams_refused >= client_refused + 1);  // and any keyless ping of the server
    CHECK(heard.server.size() == 2);  // taken: the client may not have its keys yet

    // The client's first keyed datagram checks: from then on the server takes no keyless one,
    // and what each side sends keyed arrives.
    const std::uint8_t hello[] = {'k', 'e', 'y', 'e', 'd'};
    client->send(heard.client_peer, Channel::Play, hello);
    run(*server, *client, relay, 200, heard);
    REQUIRE(heard.server.size() == 3);
    CHECK(heard.server.back() == "keyed");
    server->send(heard.server_peer, Channel::Play, hello);  // keyed now (the server had sent nothing it needed to)
    run(*server, *client, relay, 200, heard);
    REQUIRE(heard.client.size() == 2);
    CHECK(heard.client.back() == "keyed");
    const std::uint64_t server_refused = server->traffic().datagrams_refused;
    relay.forge(/*to_server=*/true, 30);
    relay.forge(/*to_server=*/false, 30);
    run(*server, *client, relay, 100, heard);
    CHECK(heard.server.size() == 3);
    CHECK(heard.client.size() == 2);
    CHECK(server->traffic().datagrams_refused >= server_refused + 1);
  }
  // ENet's disconnect at once, from a server that has not yet heard the client's keys in use (it
  // makes room among pending connections, or closes one that missed its join timeout), is keyless:
  // the client with its keys still takes that one datagram and hears the close at once.
  TEST_CASE("a client with its keys hears at once a server that closes its connection before hearing them") {
    RelayedPair pair;
    auto& [server, client, relay, heard] = pair;
    pair.authenticate();
    heard.server_peer->disconnect_now();
    bool closed = false;
    for (const std::int64_t until = monotonic_ns() + 300'000'000; monotonic_ns() < until && !closed;) {
      for (NetEvent ev = client->poll(); ev.type != NetEvent::Type::None; ev = client->poll())
        closed = closed || ev.type == NetEvent::Type::Disconnect;
      relay.pump();
      ::poll(nullptr, 0, 1);
    }
    CHECK(closed);
  }

  // A client made again with the connection id of the one before it (ENet's own ids repeat
  // within a second) on the slot the old connection held: the server once answered its CONNECT
  // keyed under the old connection's keys, which the new client cannot check, and it was shut
  // out until it gave up. A new connection never inherits a slot's old keys.
  TEST_CASE("a new connection that brings the id of the slot's last one does not inherit its keys") {
    auto server = Transport::listen("127.0.0.1", 0, 1, TransportLimits{}, nullptr);
    REQUIRE(server);
    TransportLimits same;
    same.connect_id_seed = 0x5eed;
    NetPeer* server_side = nullptr;
    std::vector<std::string> heard;
    // Polls both for `ms`, or until `done()`.
    auto pump = [&](Transport& client, int ms, const std::function<bool()>& done) {
      for (const std::int64_t until = monotonic_ns() + ms * 1'000'000LL; !done() && monotonic_ns() < until;) {
        for (NetEvent ev = server->poll(); ev.type != NetEvent::Type::None; ev = server->poll()) {
          if (ev.type == NetEvent::Type::Connect) server_side = ev.peer;
          if (ev.type == NetEvent::Type::Receive) heard.emplace_back(ev.data.begin(), ev.data.end());
        }
        for (NetEvent ev = client.poll(); ev.type != NetEvent::Type::None; ev = client.poll()) {
        }
        ::poll(nullptr, 0, 1);
      }
      return done();
    };
    std::string error;
    {
      auto first = Transport::client(same, &error);
      REQUIRE(first);
      NetPeer* to_server = first->connect("127.0.0.1", server->port(), &error);
      REQUIRE(to_server);
      REQUIRE(pump(*first, 2000, [&] { return server_side != nullptr; }));
      DatagramKeys server_keys, client_keys;
      server_keys.send.fill(3);
      server_keys.receive.fill(4);
      client_keys.send = server_keys.receive;
      client_keys.receive = server_keys.send;
      server->authenticate(server_side, server_keys, /*speaks_first=*/false);
      first->authenticate(to_server, client_keys, /*speaks_first=*/true);
      const std::uint8_t hello[] = {'k', 'e', 'y', 'e', 'd'};
      first->send(to_server, Channel::Play, hello);
      first->flush();
      REQUIRE(pump(*first, 1000, [&] { return !heard.empty(); }));  // heard keyed: the server speaks keyed now
      // The server closes the connection at once (a crash it noticed): the slot holds none.
      server_side->disconnect_now();
      server_side = nullptr;
    }
    auto second = Transport::client(same, &error);  // the same connection id
    REQUIRE(second);
    REQUIRE(second->connect("127.0.0.1", server->port(), &error));
    bool connected = false;
    for (const std::int64_t until = monotonic_ns() + 1'500'000'000; !connected && monotonic_ns() < until;) {
      while (server->poll().type != NetEvent::Type::None) {
      }
      for (NetEvent ev = second->poll(); ev.type != NetEvent::Type::None; ev = second->poll())
        connected = connected || ev.type == NetEvent::Type::Connect;
      ::poll(nullptr, 0, 1);
    }
    CHECK(connected);
  }

  // Every datagram a host drops unread is counted by kind: empty, larger than any ENet sends,
  // naming a peer slot the host does not have, and failing the check.
  TEST_CASE("datagrams dropped unread are counted by kind") {
    auto server = Transport::listen("127.0.0.1", 0, 2, TransportLimits{}, nullptr);
    REQUIRE(server);
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(server->port());
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto send = [&](const std::vector<std::uint8_t>& d) {
      REQUIRE(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
              static_cast<ssize_t>(d.size()));
    };
    const NetTraffic before = server->traffic();
    for (int i = 0; i < 3; ++i) send({});
    for (int i = 0; i < 2; ++i) send(std::vector<std::uint8_t>(9000, 7));
    send({0x00, 0x40, 0, 0, 0, 0, 1, 2});  // peer slot 64 of a 2-slot host
    send({0x0f, 0xff, 1, 2, 3, 4, 5, 6, 7, 8});  // no peer yet, a check that fails
    for (const std::int64_t until = monotonic_ns() + 300'000'000; monotonic_ns() < until;) {
      while (server->poll().type != NetEvent::Type::None) {
      }
      ::poll(nullptr, 0, 2);
    }
    ::close(fd);
    const NetTraffic after = server->traffic();
    CHECK(after.datagrams_empty - before.datagrams_empty == 3);
    CHECK(after.datagrams_oversized - before.datagrams_oversized == 2);
    CHECK(after.datagrams_unknown - before.datagrams_unknown == 1);
    CHECK(after.datagrams_refused - before.datagrams_refused == 1);
  }
}
