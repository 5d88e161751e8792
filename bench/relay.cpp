// lockstep-bench-relay: the anchor of the server-cost benchmark. The smallest ENet program that
// moves the packets a lockstep server moves: it waits for its players, then every 10 ms sends
// each of them one packet holding the latest packet of every player (padded to --down-bytes).
// No verification, no simulation, no hashing: what is left is ENet (with the protocol's keyless
// datagram check, which every datagram in the clear carries) and a timed loop written the way
// ENet's tutorial loops are, enet_host_service() with a millisecond timeout.
#include <CLI/CLI.hpp>
#include <enet/enet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/histogram.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

int main(int argc, char** argv) {
  log_setup("lockstep-bench-relay");
  CLI::App app{"lockstep-bench-relay: a bare ENet relay at 100 Hz, the anchor of lockstep-bench's server row"};
  std::uint16_t port = 0;
  std::uint32_t players = 4, ticks = 1000, down_bytes = 64;
  std::string summary_path;
  app.add_option("--port", port, "UDP port to listen on")->required();
  app.add_option("--players", players, "players to wait for")->check(CLI::Range(1u, 32u))->capture_default_str();
  app.add_option("--ticks", ticks, "ticks to relay, then leave")->check(CLI::Range(1u, 1'000'000u))->capture_default_str();
  app.add_option("--down-bytes", down_bytes, "bytes of each packet sent to a player per tick")
      ->check(CLI::Range(8u, 60'000u))->capture_default_str();
  app.add_option("--summary", summary_path, "write the JSON summary here instead of stdout");
  app.set_version_flag("--version", std::string("lockstep-bench-relay ") + lockstep::kVersion);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (enet_initialize() != 0) return 1;
  ENetAddress address{};
  address.host = ENET_HOST_ANY;
  address.port = port;
  ENetHost* host = enet_host_create(&address, players, 2, 0, 0);
  if (!host) {
    LOCKSTEP_LOG_ERROR("cannot listen on UDP port %u", port);
    return 1;
  }
  // The protocol's keyless datagram check (PROTOCOL.md §1.1), which every datagram carries in
  // the clear: the load's clients speak it, and it is part of the floor.
  host->checksum = &lockstep::keyless_check;

  // The latest packet of each player, relayed in every outgoing packet.
  struct Player {
    ENetPeer* peer = nullptr;
    std::vector<std::uint8_t> latest;
  };
  std::vector<Player> slots(players);
  std::uint32_t joined = 0;
  std::vector<std::uint8_t> out(down_bytes);
  Histogram lateness;
  TickCpuMeter cpu;
  std::int64_t deadline = 0;  // of the next tick; 0 until everyone is in
  std::uint32_t tick = 0;
  const std::int64_t wait_limit = monotonic_ns() + 60'000'000'000;

  while (tick < ticks && monotonic_ns() < wait_limit) {
    const std::int64_t now = monotonic_ns();
    if (deadline != 0 && now >= deadline) {
      ++tick;
      lateness.add_us((now - deadline) / 1000);
      std::memcpy(out.data(), &tick, sizeof tick);
      std::size_t at = sizeof tick;
      for (const Player& p : slots) {
        const std::size_t n = std::min(p.latest.size(), out.size() - at);
        std::memcpy(out.data() + at, p.latest.data(), n);
        at += n;
      }
      for (const Player& p : slots)
        if (p.peer) enet_peer_send(p.peer, 1, enet_packet_create(out.data(), out.size(), 0));
      enet_host_flush(host);
      cpu.observe(tick, tick == ticks);
      deadline += 10'000'000;
      continue;
    }
    const std::int64_t until = deadline != 0 ? deadline - now : 100'000'000;
    const auto timeout_ms = static_cast<enet_uint32>((until + 999'999) / 1'000'000);
    ENetEvent ev;
    if (enet_host_service(host, &ev, timeout_ms) <= 0) continue;
    if (ev.type == ENET_EVENT_TYPE_CONNECT && joined < players) {
      slots[joined].peer = ev.peer;
      ev.peer->data = &slots[joined];
      if (++joined == players) deadline = monotonic_ns() + 200'000'000;
    } else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
      if (auto* p = static_cast<Player*>(ev.peer->data)) p->latest.assign(ev.packet->data, ev.packet->data + ev.packet->dataLength);
      enet_packet_destroy(ev.packet);
    } else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
      if (auto* p = static_cast<Player*>(ev.peer->data)) p->peer = nullptr;
    }
  }
  for (const Player& p : slots)
    if (p.peer) enet_peer_disconnect_later(p.peer, 0);
  const std::int64_t linger = monotonic_ns() + 500'000'000;
  ENetEvent ev;
  while (monotonic_ns() < linger && enet_host_service(host, &ev, 20) >= 0) {
    if (ev.type == ENET_EVENT_TYPE_RECEIVE) enet_packet_destroy(ev.packet);
  }

  if (!redirect_summary(summary_path)) return 1;
  const double client_ticks = static_cast<double>(std::max<std::uint32_t>(tick, 1)) * players;
  const Json summary{
      {"ticks", tick},
      {"players", players},
      {"cpu_us_per_tick", cpu.us_per_tick()},
      {"lateness_us", {{"p50", lateness.percentile_us(50)}, {"p99", lateness.percentile_us(99)}, {"max", lateness.max_us()}}},
      {"wire_bytes_per_client_tick",
       {{"up", (static_cast<double>(host->totalReceivedData) + 28.0 * host->totalReceivedPackets) / client_ticks},
        {"down", (static_cast<double>(host->totalSentData) + 28.0 * host->totalSentPackets) / client_ticks}}}};
  std::printf("%s\n", json_text(summary).c_str());
  enet_host_destroy(host);
  enet_deinitialize();
  return tick == ticks ? 0 : 1;
}
