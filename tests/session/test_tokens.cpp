// Connect tokens: who gets in, with which refusal, and sealed play that stays hash-equal
// (docs/PROTOCOL.md §4.6, §4.7). On the simulated network, but for the walks between several
// servers and the status query, which run on real loopback sockets.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "lockstep/connect_token.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/status.hpp"
#include "lockstep/summary.hpp"
#include "lockstep/transport.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::drive;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

constexpr std::uint64_t kNow = 1'800'000'000;  // the server's Unix clock in these tests

ServerConfig token_server(const SecretKey& key, std::uint32_t players = 2) {
  ServerConfig cfg;
  cfg.players = players;
  cfg.last_tick = 150;
  cfg.token_key = key;
  cfg.unix_clock = [] { return kNow; };
  return cfg;
}

// A token of `client_id` naming these loopback ports, in order, good for 30 s from `created`.
ConnectToken walk_token(const SecretKey& key, std::uint64_t client_id, const std::vector<std::uint16_t>& ports,
                        std::uint64_t created = kNow, std::uint32_t slot = kAnySlot, std::vector<std::uint8_t> user_data = {}) {
  TokenRequest q;
  q.client_id = client_id;
  q.slot = slot;
  q.user_data = std::move(user_data);
  for (const std::uint16_t port : ports) q.servers.push_back(TokenAddress{{127, 0, 0, 1}, port});
  q.now = created;
  q.lifetime_seconds = 30;
  ConnectToken t;
  std::string error;
  REQUIRE(mint_connect_token(q, key, &t, &error));
  return t;
}

ConnectToken token_for(const SecretKey& key, std::uint16_t port, std::uint64_t client_id, std::uint64_t created = kNow,
                       std::uint32_t slot = kAnySlot, std::vector<std::uint8_t> user_data = {}) {
  return walk_token(key, client_id, {port}, created, slot, std::move(user_data));
}

ClientConfig with_token(const std::string& name, ConnectToken t) {
  ClientConfig c = client_named(name);
  c.connect_token = std::move(t);
  return c;
}

// A UDP socket on loopback that reads nothing: a server address that never answers.
struct SilentSocket {
  int fd = -1;
  std::uint16_t port = 0;
  SilentSocket() {
    fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~SilentSocket() { ::close(fd); }
  SilentSocket(const SilentSocket&) = delete;
  SilentSocket& operator=(const SilentSocket&) = delete;
};

// Joins `c` to `s` and waits for its end; returns its end message.
std::string refused(Session& s, ClientConfig c) {
  ClientSession& late = s.add_client(std::move(c), 9);
  REQUIRE(s.until([&] { return late.finished(); }, 10 * kSeconds));
  CHECK(late.exit_code() == 4);
  return late.end_message();
}

}  // namespace

TEST_SUITE("session/tokens") {
  TEST_CASE("players with tokens play a sealed session hash-equal, the seats are bound to their client ids") {
    const SecretKey key = random_key();
    Session s(token_server(key));
    const std::uint16_t port = s.server->port();
    s.add_client(with_token("a", token_for(key, port, 100)), 1);
    const std::vector<std::uint8_t> rank = {0x07, 0x00, 0xff};  // what the matchmaker tells the game's server side
    s.add_client(with_token("b", token_for(key, port, 200, kNow, 1, rank)), 2);  // this one's token names slot 1
    REQUIRE(s.until([&] { return s.server->executed_tick() > 10; }, 10 * kSeconds));
    // The seats name their clients, and the token's user data reaches the server side.
    const auto seat_a = s.server->seat_token(0), seat_b = s.server->seat_token(1);
    REQUIRE(seat_a);
    REQUIRE(seat_b);
    CHECK(seat_a->client_id == 100);
    CHECK(seat_a->user_data.empty());
    CHECK(seat_b->client_id == 200);
    CHECK(seat_b->user_data == rank);
    CHECK_FALSE(s.server->seat_token(2));
    const Json summary = server_summary(*s.server, 0);
    CHECK(summary["seats"][1]["client_id"] == 200);
    CHECK(summary["seats"][1]["user_data"] == "0700ff");
    CHECK(summary["seats"][0]["user_data"] == "");
    REQUIRE(s.run(20 * kSeconds));
    CHECK(s.server->exit_code() == 0);
    CHECK(s.server->executed_tick() == 150);
    CHECK(s.traces[0]->hashes == s.server_trace.hashes);
    CHECK(s.traces[1]->hashes == s.server_trace.hashes);
    CHECK(s.clients[1]->slot() == 1);
    CHECK(s.server->stats().sealed_forged == 0);
    CHECK(s.server->stats().sealed_replayed == 0);
  }

  TEST_CASE("forged, expired, foreign, truncated, replayed and missing tokens are refused with their reason") {
    const SecretKey key = random_key();
    Session s(token_server(key, 3));
    const std::uint16_t port = s.server->port();
    ConnectToken truncated = token_for(key, port, 5);
    truncated.sealed.resize(truncated.sealed.size() - 1);
    ConnectToken altered = token_for(key, port, 6);
    altered.sealed[40] ^= 1;
    CHECK(refused(s, with_token("forged", token_for(random_key(), port, 1))).find("BadToken") != std::string::npos);
    CHECK(refused(s, with_token("altered", altered)).find("BadToken") != std::string::npos);
    CHECK(refused(s, with_token("truncated", truncated)).find("BadToken") != std::string::npos);
    CHECK(refused(s, with_token("expired", token_for(key, port, 2, kNow - 31))).find("TokenExpired") != std::string::npos);
    ClientConfig foreign = with_token("foreign", token_for(key, static_cast<std::uint16_t>(port + 1), 3));
    foreign.port = port;  // a token for another server, brought here
    CHECK(refused(s, foreign).find("WrongServer") != std::string::npos);
    CHECK(refused(s, client_named("plain")).find("TokenRequired") != std::string::npos);
    // A token used from one address is refused from another: a replay by whoever saw it pass.
    const ConnectToken used = token_for(key, port, 4);
    ClientConfig first = with_token("first", used);
    first.last_tick = 1;
    ClientSession& a = s.add_client(first, 1);
    REQUIRE(s.until([&] { return a.slot() >= 0; }, 10 * kSeconds));
    ClientConfig replay = with_token("replay", used);
    replay.bind = "127.0.0.2";
    CHECK(refused(s, replay).find("TokenInUse") != std::string::npos);
    const auto& r = s.server->stats().refusals;
    CHECK(r[static_cast<std::size_t>(wire::RefuseReason::BadToken)] == 3);
    CHECK(r[static_cast<std::size_t>(wire::RefuseReason::TokenExpired)] == 1);
    CHECK(r[static_cast<std::size_t>(wire::RefuseReason::WrongServer)] == 1);
    CHECK(r[static_cast<std::size_t>(wire::RefuseReason::TokenRequired)] == 1);
    CHECK(r[static_cast<std::size_t>(wire::RefuseReason::TokenInUse)] == 1);
    // Before a peer holds its keys, nothing sent to it outgrew what it sent.
    CHECK(s.server->stats().replies_withheld == 0);
  }

  TEST_CASE("an observer who replays a player's ConnectRequest first, from its own address, does not burn the token") {
    // The request travels in the clear: anyone on the path can send it again, and sooner. The
    // server challenges that copy too, but the token is the address's that proves it holds the
    // keys, and only the player can.
    const SecretKey key = random_key();
    Session s(token_server(key, 1));
    const ConnectToken t = token_for(key, s.server->port(), 77);
    auto observer = s.raw_transport(TransportLimits{}, "127.0.0.9");
    NetPeer* link = observer->connect("127.0.0.1", s.server->port(), nullptr);
    bool connected = false, challenged = false;
    s.parts.push_back({[&](std::int64_t now) {
      for (NetEvent ev = observer->poll(); ev.type != NetEvent::Type::None; ev = observer->poll()) {
        if (ev.type == NetEvent::Type::Connect) {
          connected = true;
          observer->send(link, Channel::Control, protocol::connect_request(t.sealed));
        }
        if (ev.type == NetEvent::Type::Receive) challenged = true;  // the challenge: its keys it cannot derive
      }
      return now + 5'000'000;
    }});
    REQUIRE(s.until([&] { return challenged; }, 5 * kSeconds));
    CHECK(connected);
    ClientSession& owner = s.add_client(with_token("owner", t), 1);
    REQUIRE(s.until([&] { return owner.slot() >= 0; }, 5 * kSeconds));
    REQUIRE(s.run(20 * kSeconds));
    CHECK(owner.exit_code() == 0);
    CHECK(s.traces[0]->hashes == s.server_trace.hashes);
    CHECK(s.server->stats().refusals[static_cast<std::size_t>(wire::RefuseReason::TokenInUse)] == 0);
  }

  TEST_CASE("a client tries its token's servers in turn: a silent one, a full one, then the one that takes it") {
    const SecretKey key = random_key();
    const SilentSocket silent;  // a server that never answers
    const std::uint16_t silent_port = silent.port;
    // The full one: its one seat taken.
    ServerConfig full_cfg = token_server(key, 1);
    full_cfg.last_tick = 0;
    Session full(full_cfg, default_module(), lockstep::testing::Net::Udp);
    ClientSession& holder = full.add_client(with_token("holder", token_for(key, full.server->port(), 1)), 1);
    REQUIRE(drive(full.parts, [&] { return holder.slot() >= 0; }, 10 * kSeconds));
    Session s(token_server(key, 1), default_module(), lockstep::testing::Net::Udp);
    const ConnectToken t = walk_token(key, 2, {silent_port, full.server->port(), s.server->port()});
    ClientConfig c = with_token("walker", t);
    c.host.clear();  // the token's servers, in turn
    c.connect_timeout_ns = 6 * kSeconds;
    ClientSession& walker = s.add_client(c, 2);
    std::vector<lockstep::testing::Driven> all = s.parts;
    all.insert(all.end(), full.parts.begin(), full.parts.end());
    const auto began = std::chrono::steady_clock::now();
    REQUIRE(drive(all, [&] { return walker.slot() >= 0; }, 10 * kSeconds));
    const auto took = std::chrono::steady_clock::now() - began;
    CHECK(walker.stats().servers_tried == 3);
    CHECK(took >= std::chrono::seconds(2));  // the silent server's share: a third of 6 s
    REQUIRE(drive(all, [&] { return s.server->finished() && walker.finished(); }, 20 * kSeconds));
    CHECK(walker.exit_code() == 0);
    CHECK(s.traces[0]->hashes == s.server_trace.hashes);
    CHECK(full.server->stats().refusals[static_cast<std::size_t>(wire::RefuseReason::Full)] == 1);
    full.server->stop();
    REQUIRE(drive(full.parts, [&] { return full.server->finished(); }, 10 * kSeconds));
  }

  TEST_CASE("a rejoin walks its token's servers past one that does not know its secret, back to its own seat") {
    const SecretKey key = random_key();
    ServerConfig other_cfg = token_server(key, 1);
    other_cfg.last_tick = 0;
    Session other(other_cfg, default_module(), lockstep::testing::Net::Udp);  // a server of another match that has never seen this player
    ServerConfig cfg = token_server(key);
    cfg.last_tick = 0;
    Session s(cfg, default_module(), lockstep::testing::Net::Udp);
    s.add_client(with_token("a", token_for(key, s.server->port(), 100)), 1);
    ClientSession& b = s.add_client(with_token("b", token_for(key, s.server->port(), 200)), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() > 20; }, 10 * kSeconds));
    const std::string secret = b.rejoin_secret();
    REQUIRE_FALSE(secret.empty());
    const ConnectToken t = walk_token(key, 200, {other.server->port(), s.server->port()});
    ClientConfig again = with_token("b", t);
    again.host.clear();
    again.rejoin_secret = secret;
    ClientSession& back = s.add_client(again, 2);
    std::vector<lockstep::testing::Driven> all = s.parts;
    all.insert(all.end(), other.parts.begin(), other.parts.end());
    REQUIRE(drive(all, [&] { return back.slot() == b.slot() && s.server->stats().verified >= 1; }, 10 * kSeconds));
    CHECK(back.stats().servers_tried == 2);
    CHECK(other.server->stats().refused == 1);
    s.server->stop();
    other.server->stop();
    REQUIRE(drive(all, [&] { return s.server->finished() && other.server->finished(); }, 10 * kSeconds));
  }

  TEST_CASE("a server that closes the connection before a welcome, without a word, hands over to the token's next") {
    const SecretKey key = random_key();
    ServerConfig crowded_cfg = token_server(key, 1);
    crowded_cfg.last_tick = 0;
    crowded_cfg.max_pending = 1;
    Session crowded(crowded_cfg, default_module(), lockstep::testing::Net::Udp);
    // Its one pending place is held by a connection that has said nothing yet (not idle for a
    // second, so not evicted): the next connection is closed at once.
    auto squatter_host = Transport::client(TransportLimits{}, nullptr);
    REQUIRE(squatter_host);
    REQUIRE(squatter_host->connect("127.0.0.1", crowded.server->port(), nullptr));
    crowded.parts.push_back({[&](std::int64_t now) {
                               while (squatter_host->poll().type != NetEvent::Type::None) {
                               }
                               return now + 5'000'000;
                             },
                             [&] { return squatter_host->fd(); }});
    drive(crowded.parts, [] { return false; }, 150'000'000);  // its connection completes
    Session s(token_server(key, 1), default_module(), lockstep::testing::Net::Udp);
    const ConnectToken t = walk_token(key, 4, {crowded.server->port(), s.server->port()});
    ClientConfig c = with_token("walker", t);
    c.host.clear();
    ClientSession& walker = s.add_client(c, 1);
    std::vector<lockstep::testing::Driven> all = s.parts;
    all.insert(all.end(), crowded.parts.begin(), crowded.parts.end());
    REQUIRE(drive(all, [&] { return s.server->finished() && walker.finished(); }, 20 * kSeconds));
    CHECK(crowded.server->stats().pending_refused == 1);
    CHECK(walker.stats().servers_tried == 2);
    CHECK(walker.exit_code() == 0);
    crowded.server->stop();
    REQUIRE(drive(crowded.parts, [&] { return crowded.server->finished(); }, 10 * kSeconds));
  }

  TEST_CASE("a walk ends at a refusal that holds for every server (an expired token), an empty host needs a token") {
    const SecretKey key = random_key();
    Session s(token_server(key, 1));
    const SilentSocket silent;
    // Expired: every server says so, so the walk stops at the first answer.
    const ConnectToken t = walk_token(key, 3, {silent.port, s.server->port(), s.server->port()}, kNow - 40);
    ClientConfig c = with_token("late", t);
    c.host.clear();
    c.connect_timeout_ns = 4 * kSeconds;
    // The first address never answers: after its share (4 s / 3) the second answers TokenExpired.
    const std::string why = refused(s, c);
    CHECK(why.find("TokenExpired") != std::string::npos);
    CHECK(s.clients.back()->stats().servers_tried == 2);  // not the third: expiry is every server's answer
    ClientConfig none = client_named("nowhere");
    none.host.clear();
    none.factory = default_module().create;
    Error err;
    CHECK(ClientSession::create(none, &err) == nullptr);
    CHECK(err.field == "host");
  }

  TEST_CASE("a rejoin needs the seat's secret and a token of the same client, an expired token still brings it back") {
    const SecretKey key = random_key();
    ServerConfig cfg = token_server(key);
    cfg.last_tick = 0;
    Session s(cfg);
    const std::uint16_t port = s.server->port();
    s.add_client(with_token("a", token_for(key, port, 100)), 1);
    ClientSession& b = s.add_client(with_token("b", token_for(key, port, 200)), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() > 20; }, 10 * kSeconds));
    const std::string secret = b.rejoin_secret();
    REQUIRE_FALSE(secret.empty());
    // Another client's token with b's secret is refused; b's own client id comes back (its first
    // token long expired), and the old connection is closed for it.
    ClientConfig thief = with_token("thief", token_for(key, port, 300));
    thief.rejoin_secret = secret;
    CHECK(refused(s, thief).find("unknown rejoin secret") != std::string::npos);
    ClientConfig again = with_token("b", token_for(key, port, 200, kNow - 60));
    again.rejoin_secret = secret;
    ClientSession& back = s.add_client(again, 2);
    REQUIRE(s.until([&] { return back.slot() == b.slot() && s.server->stats().verified >= 1; }, 10 * kSeconds));
    // A second join of a seated client without the secret is refused.
    CHECK(refused(s, with_token("b2", token_for(key, port, 200))).find("TokenInUse") != std::string::npos);
    s.server->stop();
    REQUIRE(s.until([&] { return s.server->finished(); }, 10 * kSeconds));
  }

  TEST_CASE("the status key: names and figures for its holder, sealed, the public part for anyone else") {
    const SecretKey key = random_key(), status = random_key();
    ServerConfig cfg = token_server(key);
    cfg.status_key = status;
    cfg.unix_clock = nullptr;  // the status proof carries the wall clock's time
    cfg.last_tick = 0;
    Session s(cfg, default_module(), lockstep::testing::Net::Udp);  // query_status speaks UDP
    const std::uint16_t port = s.server->port();
    s.add_client(with_token("alice", token_for(key, port, 100, unix_seconds())), 1);
    s.add_client(with_token("bob", token_for(key, port, 200, unix_seconds())), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() > 10; }, 10 * kSeconds));
    for (const SecretKey* with : {static_cast<const SecretKey*>(nullptr), &status}) {
      std::optional<protocol::Status> st;
      std::atomic<bool> answered{false};
      std::thread asker([&] {
        std::string error;
        st = query_status("127.0.0.1", port, 3 * kSeconds, &error, with);
        answered = true;
      });
      s.until([&] { return answered.load(); }, 4 * kSeconds);
      asker.join();
      REQUIRE(st.has_value());
      CHECK(st->players == 2);
      CHECK(st->fingerprint != 0);
      CHECK(st->full == (with != nullptr));
      CHECK(st->seats.size() == (with ? 2u : 0u));
      if (with) CHECK(st->seats[0].name == "alice");
    }
    CHECK(s.server->stats().status_public == 1);
    CHECK(s.server->stats().status_full == 1);
    s.server->stop();
    REQUIRE(s.until([&] { return s.server->finished(); }, 10 * kSeconds));
  }
}
