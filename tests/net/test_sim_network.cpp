// The tests' simulated network (support/sim_network.hpp), held to the parts of ENet's behaviour
// the session suites rely on: handshakes and their events, a reliable ordered control channel
// under loss, an unreliable play channel, the size limit and the simulated clock.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/sim_network.hpp"

using namespace lockstep;
using lockstep::testing::Driven;
using lockstep::testing::SimNetwork;

namespace {

struct Seen {
  int connects = 0, disconnects = 0;
  std::vector<std::vector<std::uint8_t>> control, play;
  std::vector<std::int64_t> arrivals;
  NetPeer* peer = nullptr;
};

void poll_all(Transport& t, Seen& seen) {
  for (NetEvent ev = t.poll(); ev.type != NetEvent::Type::None; ev = t.poll()) {
    switch (ev.type) {
      case NetEvent::Type::Connect:
        ++seen.connects;
        seen.peer = ev.peer;
        break;
      case NetEvent::Type::Disconnect: ++seen.disconnects; break;
      case NetEvent::Type::Receive:
        (ev.channel == 0 ? seen.control : seen.play).emplace_back(ev.data.begin(), ev.data.end());
        seen.arrivals.push_back(ev.arrived_ns);
        break;
      case NetEvent::Type::None: break;
    }
  }
}

// Steps the clock 1 ms at a time for `ms`, serving both ends each step.
void run_ms(SimNetwork& net, Transport& a, Seen& sa, Transport& b, Seen& sb, int ms) {
  for (int i = 0; i < ms; ++i) {
    poll_all(a, sa);
    poll_all(b, sb);
    net.advance_to(net.now() + 1'000'000);
  }
}

std::vector<std::uint8_t> numbered(std::uint32_t i) {
  return {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i >> 8), 0x5a};
}

}  // namespace

TEST_SUITE("net/sim") {
  TEST_CASE("simulated network: both ends see the connect, messages both ways, and disconnect_later's two events") {
    SimNetwork net;
    FaultConfig link;
    link.delay_ns = 30'000'000;
    net.set_link_faults(link);
    auto server = net.listen("", 0, 4, {}, nullptr);
    auto client = net.client({}, nullptr, "");
    REQUIRE(server);
    REQUIRE(client);
    CHECK(server->fd() == -1);
    Seen ss, cs;
    NetPeer* to_server = client->connect("127.0.0.1", server->port(), nullptr);
    REQUIRE(to_server != nullptr);
    CHECK(client->reliable_in_flight());
    run_ms(net, *server, ss, *client, cs, 29);
    CHECK(ss.connects == 0);  // the request is 30 ms on its way
    run_ms(net, *server, ss, *client, cs, 2);
    CHECK(ss.connects == 1);
    CHECK(cs.connects == 0);  // the answer is on its way back
    run_ms(net, *server, ss, *client, cs, 31);
    REQUIRE(cs.connects == 1);
    CHECK(cs.peer == to_server);
    CHECK(peer_net(to_server).rtt_us == 60'000);
    client->send(to_server, Channel::Control, numbered(1));
    client->send(to_server, Channel::Play, numbered(2));
    server->send(ss.peer, Channel::Control, numbered(3));
    const std::int64_t sent = net.now();
    run_ms(net, *server, ss, *client, cs, 40);
    REQUIRE(ss.control.size() == 1);
    REQUIRE(ss.play.size() == 1);
    CHECK(ss.control[0] == numbered(1));
    CHECK(ss.play[0] == numbered(2));
    REQUIRE(cs.control.size() == 1);
    CHECK(cs.control[0] == numbered(3));
    CHECK(ss.arrivals[0] >= sent + 30'000'000);
    CHECK(server->heard_ns(ss.peer) >= sent + 30'000'000);
    CHECK(client->traffic().packets_sent >= 3);
    CHECK(server->traffic().packets_received == client->traffic().packets_sent);
    peer_disconnect_later(to_server);
    run_ms(net, *server, ss, *client, cs, 31);
    CHECK(ss.disconnects == 1);
    CHECK(cs.disconnects == 0);  // the acknowledgement is on its way back
    CHECK(peer_told_all(to_server));
    run_ms(net, *server, ss, *client, cs, 31);
    CHECK(cs.disconnects == 1);
    CHECK_FALSE(client->reliable_in_flight());
  }

  TEST_CASE("simulated network: through 30 % loss every control message arrives once and in order, play messages are lost") {
    SimNetwork net;
    FaultConfig link;
    link.loss_pct = 30;
    link.delay_ns = 10'000'000;
    link.jitter_ns = 5'000'000;
    link.reorder_pct = 10;
    link.seed = 17;
    net.set_link_faults(link);
    auto server = net.listen("", 0, 4, {}, nullptr);
    auto client = net.client({}, nullptr, "");
    Seen ss, cs;
    NetPeer* to_server = client->connect("127.0.0.1", server->port(), nullptr);
    run_ms(net, *server, ss, *client, cs, 2000);  // the handshake, however often it is lost
    REQUIRE(cs.connects == 1);
    for (std::uint32_t i = 0; i < 400; ++i) {
      client->send(to_server, Channel::Control, numbered(i));
      client->send(to_server, Channel::Play, numbered(i));
      client->flush();  // each pair a datagram of its own
      run_ms(net, *server, ss, *client, cs, 1);
    }
    run_ms(net, *server, ss, *client, cs, 5000);
    REQUIRE(ss.control.size() == 400);
    for (std::uint32_t i = 0; i < 400; ++i) REQUIRE(ss.control[i] == numbered(i));
    CHECK(ss.play.size() > 200);  // about 70 % of 400
    CHECK(ss.play.size() < 340);
    CHECK(net.lost() > 200);
    bool out_of_order = false;
    for (std::size_t i = 1; i < ss.play.size(); ++i) out_of_order |= ss.play[i][0] + 256 * ss.play[i][1] < ss.play[i - 1][0] + 256 * ss.play[i - 1][1];
    CHECK(out_of_order);  // jitter and reordering reach the play channel
  }

  TEST_CASE("simulated network: a full listener ignores a connection, an oversized message is refused, a reset peer is gone") {
    SimNetwork net;
    auto server = net.listen("", 0, 1, {}, nullptr);
    auto first = net.client({}, nullptr, "");
    auto second = net.client({}, nullptr, "");
    Seen ss, s1, s2;
    NetPeer* p1 = first->connect("127.0.0.1", server->port(), nullptr);
    run_ms(net, *server, ss, *first, s1, 5);
    NetPeer* p2 = second->connect("localhost", server->port(), nullptr);
    for (int i = 0; i < 500; ++i) {
      run_ms(net, *server, ss, *second, s2, 1);
      poll_all(*first, s1);
    }
    CHECK(s1.connects == 1);
    CHECK(s2.connects == 0);  // no free slot: the request goes unanswered
    CHECK(ss.connects == 1);
    CHECK(second->connect("example.com", server->port(), nullptr) == nullptr);
    first->send(p1, Channel::Control, std::vector<std::uint8_t>(TransportLimits{}.max_packet_bytes + 1, 1));
    first->send(p1, Channel::Control, numbered(7));
    run_ms(net, *server, ss, *first, s1, 5);
    REQUIRE(ss.control.size() == 1);
    CHECK(ss.control[0] == numbered(7));
    peer_reset(p1);
    first->send(p1, Channel::Control, numbered(8));
    run_ms(net, *server, ss, *first, s1, 5);
    CHECK(ss.control.size() == 1);  // nothing more from it
    CHECK(ss.disconnects == 0);     // nor a word of its going: the server's own bounds must tell
    (void)p2;
  }

  TEST_CASE("drive_simulated jumps the clock to the next thing due, however far, and stops at its timeout") {
    SimNetwork net(5'000'000'000);
    std::vector<std::int64_t> woken;
    const std::vector<Driven> parts{{[&](std::int64_t now) {
      woken.push_back(now);
      return now + 3'000'000'000;  // every 3 s
    }}};
    CHECK(drive_simulated(net, parts, [&] { return woken.size() == 4; }, 60'000'000'000));
    CHECK(woken == std::vector<std::int64_t>{5'000'000'000, 8'000'000'000, 11'000'000'000, 14'000'000'000});
    CHECK_FALSE(drive_simulated(net, parts, [] { return false; }, 10'000'000'000));
    CHECK(net.now() > 24'000'000'000);
  }
}
