// net/enet_coexist: a game's own ENet host and lockstep's transport in one program, as a studio
// links them, built twice: once as a game that does not ask for batched socket calls (ENet keeps
// its own enet_socket_receive/send, and so does lockstep's transport), once as a program that asks
// (LOCKSTEP_DEFINE_ENET_BATCHING, as lockstep-server does). Either way the game's host talks to its
// own peer and to lockstep's transport, byte for byte; only the transport's reads differ.
// Usage: lockstep-enet-coexist[-batching]; exit 0 when every check held, 1 otherwise.
#include <enet/enet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/transport.hpp"

#ifdef LOCKSTEP_COEXIST_BATCHING
#include "lockstep/enet_batching.h"
LOCKSTEP_DEFINE_ENET_BATCHING()
constexpr bool kAsked = true;
#else
constexpr bool kAsked = false;
#endif

using namespace lockstep;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

std::vector<std::uint8_t> payload(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 31);
  return v;
}

}  // namespace

int main() {
  std::string why;
  const bool batching = Transport::enet_batching(&why);
  check(batching == kAsked, std::string("socket batching is ") + (batching ? "on" : "off (" + why + ")") +
                                (kAsked ? ", asked for" : ", not asked for"));

  // The game's own pair of ENet hosts, with no datagram check: plain ENet.
  ENetAddress any{};
  enet_address_set_host_ip(&any, "127.0.0.1");
  any.port = 0;
  ENetHost* game_server = enet_host_create(&any, 2, 1, 0, 0);
  ENetHost* game_client = enet_host_create(nullptr, 2, 2, 0, 0);
  if (!game_server || !game_client) return std::printf("FAIL no ENet host\n"), 1;
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  getsockname(game_server->socket, reinterpret_cast<sockaddr*>(&bound), &len);
  ENetAddress to_game = any;
  to_game.port = ntohs(bound.sin_port);
  ENetPeer* to_game_server = enet_host_connect(game_client, &to_game, 1, 0);
  // lockstep's transport, and the game's client connecting to it too (the protocol's check on).
  auto transport = Transport::listen("127.0.0.1", 0, 4, TransportLimits{}, nullptr);
  if (!transport || !to_game_server) return std::printf("FAIL no transport\n"), 1;
  ENetHost* game_to_lockstep = enet_host_create(nullptr, 1, 2, 0, 0);
  game_to_lockstep->checksum = &keyless_check;
  ENetAddress to_transport = any;
  to_transport.port = transport->port();
  ENetPeer* to_lockstep = enet_host_connect(game_to_lockstep, &to_transport, 2, 0);

  // 60 reliable packets each way between the game's hosts, sizes 1 to 3000 bytes (past ENet's MTU,
  // so some go in fragments), and 20 messages to the transport, each echoed back.
  constexpr int kPackets = 60, kMessages = 20;
  std::vector<std::vector<std::uint8_t>> sent, got_at_server, got_at_client, echoed;
  for (int i = 0; i < kPackets; ++i) sent.push_back(payload(1 + static_cast<std::size_t>(i) * 50, static_cast<std::uint8_t>(i)));
  ENetPeer* game_peer_at_server = nullptr;
  NetPeer* at_transport = nullptr;
  bool game_connected = false, lockstep_connected = false;
  int messages_sent = 0;
  for (const std::int64_t until = monotonic_ns() + 5'000'000'000;
       monotonic_ns() < until && (got_at_client.size() < sent.size() || echoed.size() < kMessages);) {
    ENetEvent ev;
    while (enet_host_service(game_server, &ev, 0) > 0) {
      if (ev.type == ENET_EVENT_TYPE_CONNECT) {
        game_peer_at_server = ev.peer;
        for (const auto& p : sent) enet_peer_send(ev.peer, 0, enet_packet_create(p.data(), p.size(), ENET_PACKET_FLAG_RELIABLE));
      }
      if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
        got_at_server.emplace_back(ev.packet->data, ev.packet->data + ev.packet->dataLength);
        enet_packet_destroy(ev.packet);
      }
    }
    while (enet_host_service(game_client, &ev, 0) > 0) {
      if (ev.type == ENET_EVENT_TYPE_CONNECT && !game_connected) {
        game_connected = true;
        for (const auto& p : sent) enet_peer_send(to_game_server, 0, enet_packet_create(p.data(), p.size(), ENET_PACKET_FLAG_RELIABLE));
      }
      if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
        got_at_client.emplace_back(ev.packet->data, ev.packet->data + ev.packet->dataLength);
        enet_packet_destroy(ev.packet);
      }
    }
    while (enet_host_service(game_to_lockstep, &ev, 0) > 0) {
      if (ev.type == ENET_EVENT_TYPE_CONNECT) lockstep_connected = true;
      if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
        echoed.emplace_back(ev.packet->data, ev.packet->data + ev.packet->dataLength);
        enet_packet_destroy(ev.packet);
      }
    }
    if (lockstep_connected && messages_sent < kMessages) {
      const auto m = payload(10 + static_cast<std::size_t>(messages_sent) * 40, 7);
      enet_peer_send(to_lockstep, 0, enet_packet_create(m.data(), m.size(), ENET_PACKET_FLAG_RELIABLE));
      ++messages_sent;
    }
    for (NetEvent e = transport->poll(); e.type != NetEvent::Type::None; e = transport->poll()) {
      if (e.type == NetEvent::Type::Connect) at_transport = e.peer;
      if (e.type == NetEvent::Type::Receive && at_transport)
        transport->send(at_transport, Channel::Control, std::vector<std::uint8_t>(e.data.begin(), e.data.end()));
    }
    transport->flush();
    usleep(500);
  }
  check(game_peer_at_server && game_connected, "the game's hosts connected");
  check(got_at_server == sent, "the game's server got its client's " + std::to_string(got_at_server.size()) + " of " +
                                   std::to_string(kPackets) + " packets, in order, byte for byte");
  check(got_at_client == sent, "the game's client got its server's " + std::to_string(got_at_client.size()) + " of " +
                                   std::to_string(kPackets) + " packets, in order, byte for byte");
  bool echoes_right = echoed.size() == kMessages;
  for (std::size_t i = 0; echoes_right && i < echoed.size(); ++i) echoes_right = echoed[i] == payload(10 + i * 40, 7);
  check(echoes_right, "lockstep's transport echoed " + std::to_string(echoed.size()) + " of " + std::to_string(kMessages) +
                          " messages from the game's host");
  // The transport read its socket in batches exactly when the program asked for them.
  const std::uint64_t batched_reads = transport->traffic().socket_reads;
  check((batched_reads > 0) == kAsked, "the transport's batched reads: " + std::to_string(batched_reads));
  transport.reset();
  enet_host_destroy(game_to_lockstep);
  enet_host_destroy(game_client);
  enet_host_destroy(game_server);
  std::printf("%s\n", failures == 0 ? "enet_coexist: every check held" : "enet_coexist: FAILED");
  return failures == 0 ? 0 : 1;
}
