// The session layer's pure parts, without sockets or clocks: admission, the input window, the
// hash ledger, the stalled-acknowledgement resend, the client's tick clock and frame intake, and
// desync localization between two simulations.
#include <doctest/doctest.h>

#include <vector>

#include "lockstep/admission.hpp"
#include "lockstep/arena.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/desync_probe.hpp"
#include "lockstep/frame_intake.hpp"
#include "lockstep/hash_ledger.hpp"
#include "lockstep/input_window.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/resend.hpp"
#include "lockstep/seen_loss.hpp"
#include "lockstep/summary.hpp"
#include "lockstep/tick_clock.hpp"
#include "lockstep/version.hpp"
#include "support/localize.hpp"
#include "support/ticks.hpp"
#include "support/tiny_sim.hpp"
#include "support/time.hpp"

using namespace lockstep;

namespace {

using lockstep::testing::kMs;

// Consecutive player ticks packed as a ClientPlay carries them once decoded.
struct Packed {
  PackedInputs bytes;
  std::size_t count = 0;
  explicit Packed(const lockstep::testing::Ticks& t) : count(t.items.size()) { pack_ticks(t, bytes); }
  [[nodiscard]] PackedView view() const { return bytes.view(); }
};
bool receive(InputWindow& w, Tick first, const Packed& p, Tick next_tick, std::int64_t next_deadline,
             std::int64_t arrived) {
  return w.receive(first, p.view(), p.count, next_tick, next_deadline, arrived);
}

JoinFacts request(const char* name = "ann") {
  JoinFacts q;
  q.protocol_version = kProtocolVersion;
  q.fingerprint = 42;
  q.name = name;
  return q;
}

AdmissionRules rules(bool lobby = true) {
  AdmissionRules r;
  r.protocol_version = kProtocolVersion;
  r.fingerprint = 42;
  r.lobby = lobby;
  r.max_spectators = 1;
  return r;
}

// An arena world after `ticks` ticks of neutral inputs from both players.
std::unique_ptr<Simulation> stepped_arena(const WorldParams& world, Tick ticks) {
  auto sim = make_arena(world);
  InputFrame f;
  f.present = 3;
  for (Tick t = 1; t <= ticks; ++t) {
    f.tick = t;
    sim->step(f);
  }
  return sim;
}

}  // namespace

TEST_SUITE("session/parts") {
  TEST_CASE("the state history follows the round trip and keeps pinned states past its window") {
    // Five round trips and half a second, in ticks, within the bounds.
    CHECK(history_for_round_trip(0, 64, 2000) == 64);
    CHECK(history_for_round_trip(500 * kMs, 64, 2000) == 300);   // 250 ms one way
    CHECK(history_for_round_trip(60'000 * kMs, 64, 2000) == 2000);
    CHECK(history_for_round_trip(500 * kMs, 400, 100) == 400);   // the minimum wins over a smaller maximum

    auto sim = make_arena(arena_world(3, 20, 2));
    StateHistory h(8);
    std::vector<std::vector<std::uint8_t>> states(41);
    InputFrame f;
    for (Tick t = 1; t <= 40; ++t) {
      f.reset(t, 2, sim->input_size());
      f.present = 3;
      sim->step(f);
      sim->serialize(states[t]);
      h.record(*sim);
      if (t == 20) CHECK(h.pin(20));
    }
    CHECK(h.bytes(32) == nullptr);    // out of the window of 8
    REQUIRE(h.bytes(33) != nullptr);
    REQUIRE(h.bytes(20) != nullptr);  // pinned
    CHECK(*h.bytes(20) == states[20]);
    h.resize(4);  // the newest four stay
    CHECK(h.capacity() == 4);
    CHECK(h.bytes(36) == nullptr);
    for (Tick t = 37; t <= 40; ++t) CHECK(*h.bytes(t) == states[t]);
    h.resize(100);  // growing keeps them where they are found
    for (Tick t = 37; t <= 40; ++t) CHECK(*h.bytes(t) == states[t]);
    h.unpin(20);
    CHECK(h.bytes(20) == nullptr);
    CHECK_FALSE(h.pin(5));  // not held: nothing to pin
    for (Tick t = 37; t <= 37 + StateHistory::kMaxPinned; ++t) h.pin(t);
    CHECK(h.bytes(37) != nullptr);  // still in the window; its pin was the oldest and went
    h.clear();
    CHECK(h.bytes(40) == nullptr);
  }

  TEST_CASE("the loss a session sees: due messages that never came, duplicates and late ones once, no gap across a restart") {
    SeenLoss l;
    for (Tick t = 1; t <= 200; ++t)
      if (t % 10 != 0) l.saw(t);  // every tenth lost
    CHECK(l.lost() == 13);       // ticks 10..130: judged once the window (64) moved past them
    CHECK(l.received() == 180);
    l.saw(150);                  // a late one inside the window still counts
    CHECK(l.received() == 181);
    l.saw(150);                  // a duplicate does not
    l.saw(20);                   // nor one already judged lost
    CHECK(l.received() == 181);
    CHECK(l.lost() == 13);
    for (Tick t = 201; t <= 400; ++t) l.saw(t);
    CHECK(l.lost() == 19);       // 140, 160, ..., 200 (150 came late)
    CHECK(l.loss() == doctest::Approx(19.0 / (19 + 381)));
    l.restart();                 // a reconnect 1000 ticks later: the gap is not loss
    for (Tick t = 1400; t <= 1600; ++t) l.saw(t);
    CHECK(l.lost() == 19);
    l.saw(5000);                 // a gap wider than the window, in one connection: lost, all but
    CHECK(l.lost() == 19 + (5000 - 1600 - 1) - 63);  // the 63 still inside the window


    SeenLoss every2(2);          // one message every 2 ticks: its newest tick names it
    for (Tick t = 2; t <= 400; t += 2)
      if (t % 20 != 0) every2.saw(t);
    CHECK(every2.lost() == 13);  // ticks 20, 40, ..., 260: judged once the window moved past them
    CHECK(every2.received() == 180);

    // A browser on the WebSocket door: one message a 60 Hz frame, each carrying the ticks since its
    // last (1 or 2). Counted by the newest tick alone, 40 % of a lossless stream's ticks read lost.
    SeenLoss by_newest, by_range;
    Tick sent = 0;
    for (int frame = 1; frame <= 600; ++frame) {
      const Tick upto = static_cast<Tick>(frame * 100 / 60);
      if (upto <= sent) continue;
      by_newest.saw(upto);
      by_range.saw_range(sent + 1, upto);
      sent = upto;
    }
    CHECK(by_newest.loss() > 0.3);
    CHECK(by_range.lost() == 0);
    CHECK(by_range.received() == sent);
  }

  TEST_CASE("a fingerprint refusal names the library whose build differs, and the join carries the list bounded") {
    using R = wire::RefuseReason;
    std::vector<SeatView> seats(2);
    auto server = rules();
    server.libraries = {{"libbox2d.so.2.4", "bdf5"}, {"libfoo.so.1", "aa"}};
    auto q = request();
    q.fingerprint = 43;
    q.libraries = {{"libbox2d.so.2.4", "420a"}, {"libfoo.so.1", "aa"}, {"libbar.so.3", "bb"}};
    const JoinDecision d = decide_join(q, server, seats);
    CHECK(d.reason == R::WrongFingerprint);
    CHECK(d.detail.find("libbox2d.so.2.4 is another build: the joining peer's 420a, the server's bdf5") != std::string::npos);
    CHECK(d.detail.find("the joining peer's module links libbar.so.3") != std::string::npos);
    CHECK(d.detail.find("libfoo") == std::string::npos);  // the same build is not named
    CHECK(library_difference(server.libraries, server.libraries, "a", "b").empty());
    CHECK(library_difference({}, server.libraries, "the joining peer", "the server")
              .find("the server's module links libbox2d.so.2.4") != std::string::npos);
    // Equal fingerprints admit whatever the lists say: the fingerprint is what is checked.
    q.fingerprint = rules().fingerprint;
    CHECK(decide_join(q, server, seats).kind == JoinDecision::Kind::Seat);

    // On the wire: the list arrives as sent; more than 16, or an over-long name, is refused by decode.
    const std::vector<LibraryBuild> libs = {{"libbox2d.so.2.4", "bdf5"}, {"libfoo.so.1", "aa"}};
    const auto bytes = protocol::join_request(kProtocolVersion, 42, "", "p", false, "", libs);
    const wire::Message* m = protocol::decode(bytes, nullptr);
    REQUIRE(m);
    REQUIRE(m->body_type() == wire::Body::JoinRequest);
    CHECK(protocol::join_libraries(*m->body_as_JoinRequest()) == libs);
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<wire::LibraryBuild>> many;
    for (int i = 0; i < 17; ++i) many.push_back(wire::CreateLibraryBuild(fbb, fbb.CreateString("l"), fbb.CreateString("b")));
    const auto v = fbb.CreateVector(many);
    const auto jr = wire::CreateJoinRequest(fbb, kProtocolVersion, 42, 0, fbb.CreateString("p"), false, 0, v);
    fbb.Finish(wire::CreateMessage(fbb, wire::Body::JoinRequest, jr.Union()), "LSK1");
    protocol::DecodeError err{};
    CHECK(protocol::decode({fbb.GetBufferPointer(), fbb.GetSize()}, &err) == nullptr);
    CHECK(err == protocol::DecodeError::FieldOutOfRange);
  }

  TEST_CASE("the same rules in other machine code meet only when the determinism gate showed the builds equal") {
    using R = wire::RefuseReason;
    using K = JoinDecision::Kind;
    std::vector<SeatView> seats(2);
    auto server = rules();
    server.code = "5e6f7a8b9c0d1e2f3a4b";
    auto q = request();  // the same fingerprint: the same sources
    q.code = server.code;
    CHECK(decide_join(q, server, seats).kind == K::Seat);
    q.code = "1a2b3c4d5e6f7a8b9c0d";  // built with FMA contraction, say
    const JoinDecision d = decide_join(q, server, seats);
    CHECK(d.reason == R::WrongFingerprint);
    CHECK_MESSAGE(d.detail.find("the module's machine code differs: the joining peer's 1a2b3c4d5e6f7a8b, the server's "
                                "5e6f7a8b9c0d1e2f; no gate run showed them equal (another flag, FMA") != std::string::npos,
                  d.detail);
    CHECK(d.detail.size() <= 256);  // what a Refuse carries
    // When one build has fused multiply-adds and the other none, the refusal names the cause.
    q.code_fma = 473;
    const JoinDecision fma = decide_join(q, server, seats);
    CHECK_MESSAGE(fma.detail.find("the module's machine code differs: the joining peer's build has 473 fused multiply-adds, "
                                  "the server's 0 (FMA contraction gives other results); 1a2b3c4d5e6f vs 5e6f7a8b9c0d, no "
                                  "gate run showed them equal (--equal-builds)") != std::string::npos,
                  fma.detail);
    CHECK(fma.detail.size() <= 256);
    {  // Codes that hash a module with the libraries it opts out are named whole, still within a Refuse.
      JoinFacts h = q;
      AdmissionRules hs = server;
      h.code = "xxh3:e27786e617b710f7";
      hs.code = "xxh3:a76908469ec850f7";
      h.code_fma = 1645;
      const JoinDecision hd = decide_join(h, hs, seats);
      CHECK_MESSAGE(hd.detail.find("has 1645 fused multiply-adds, the server's 0 (FMA contraction gives other results); "
                                   "xxh3:e27786e617b710f7 vs xxh3:a76908469ec850f7, no gate") != std::string::npos,
                    hd.detail);
      CHECK(hd.detail.size() <= 256);
    }
    q.code_fma = 0;
    // The gate's list admits it only with the server's own build in it.
    server.equal_builds = {q.code};
    CHECK(decide_join(q, server, seats).reason == R::WrongFingerprint);
    server.equal_builds = {q.code, server.code};
    CHECK(decide_join(q, server, seats).kind == K::Seat);
    // Rules not from a module file (an embedding game, a built-in module) carry no code: not checked.
    q.code = "";
    server.equal_builds.clear();
    CHECK(decide_join(q, server, seats).kind == K::Seat);

    // On the wire: the code arrives as sent; longer than 80 bytes is refused by decode.
    const auto bytes = protocol::join_request(kProtocolVersion, 42, "", "p", false, "", {}, "1a2b3c4d");
    const wire::Message* m = protocol::decode(bytes, nullptr);
    REQUIRE(m);
    REQUIRE(m->body_as_JoinRequest()->code());
    CHECK(m->body_as_JoinRequest()->code()->str() == "1a2b3c4d");
    flatbuffers::FlatBufferBuilder fbb;
    const auto jr = wire::CreateJoinRequest(fbb, kProtocolVersion, 42, 0, fbb.CreateString("p"), false, 0, 0,
                                            fbb.CreateString(std::string(81, 'a')));
    fbb.Finish(wire::CreateMessage(fbb, wire::Body::JoinRequest, jr.Union()), "LSK1");
    protocol::DecodeError err{};
    CHECK(protocol::decode({fbb.GetBufferPointer(), fbb.GetSize()}, &err) == nullptr);
    CHECK(err == protocol::DecodeError::FieldOutOfRange);
  }

  TEST_CASE("a draining server refuses new players and spectators as Draining and still takes a seated player back") {
    using K = JoinDecision::Kind;
    using R = wire::RefuseReason;
    std::vector<SeatView> seats(2);
    seats[0] = {true, true, "secret-0", false, 0};  // left mid-match: its seat waits for it
    auto running = rules();
    running.lobby = false;
    running.allow_late_join = true;
    running.max_spectators = 4;
    CHECK(decide_join(request(), running, seats).kind == K::LateJoin);
    auto draining = running;
    draining.draining = true;
    CHECK(decide_join(request(), draining, seats).reason == R::Draining);
    auto watch = request();
    watch.spectate = true;
    CHECK(decide_join(watch, running, seats).kind == K::Spectate);
    CHECK(decide_join(watch, draining, seats).reason == R::Draining);
    auto back = request();
    back.rejoin_secret = "secret-0";
    const JoinDecision d = decide_join(back, draining, seats);
    CHECK(d.kind == K::Rejoin);
    CHECK(d.slot == 0);
    auto lobby = rules();
    lobby.draining = true;
    CHECK(decide_join(request(), lobby, std::vector<SeatView>(2)).reason == R::Draining);
  }

  TEST_CASE("admission refuses each bad join with its reason and seats the rest") {
    using K = JoinDecision::Kind;
    using R = wire::RefuseReason;
    std::vector<SeatView> seats(2);
    auto q = request();
    q.protocol_version = kProtocolVersion + 1;
    CHECK(decide_join(q, rules(), seats).reason == R::WrongVersion);
    q = request();
    q.fingerprint = 43;
    CHECK(decide_join(q, rules(), seats).reason == R::WrongFingerprint);
    auto with_token = rules();
    with_token.join_secret = "secret";
    CHECK(decide_join(request(), with_token, seats).reason == R::WrongToken);
    CHECK(decide_join(request("a\tb"), rules(), seats).reason == R::BadRequest);
    const auto d = decide_join(request(), rules(), seats);
    CHECK(d.kind == K::Seat);
    CHECK(d.slot == 0);
    seats[0].taken = true;
    seats[0].vacant = false;
    CHECK(decide_join(request(), rules(), seats).slot == 1);
    seats[1] = seats[0];
    CHECK(decide_join(request(), rules(), seats).reason == R::Full);
    q = request();
    q.spectate = true;
    CHECK(decide_join(q, rules(), seats).kind == K::Spectate);
    auto full = rules();
    full.spectators = 1;
    CHECK(decide_join(q, full, seats).reason == R::Full);
  }

  TEST_CASE("admission: a token's client watches from one spectator seat at most, however many seats are free") {
    using R = wire::RefuseReason;
    std::vector<SeatView> seats(2);
    seats[0] = {true, false, "aaaa", true, 7};  // client 7 also plays in slot 0
    auto q = request();
    q.spectate = true;
    q.has_client_id = true;
    q.client_id = 7;
    auto r = rules();
    r.max_spectators = 8;
    CHECK(decide_join(q, r, seats).kind == JoinDecision::Kind::Spectate);  // a player's second screen
    r.spectators = 1;
    r.spectating_clients = {7};
    const JoinDecision again = decide_join(q, r, seats);
    CHECK(again.kind == JoinDecision::Kind::Refuse);
    CHECK(again.reason == R::TokenInUse);
    CHECK(again.detail.find("client 7") != std::string::npos);
    q.client_id = 8;  // another client's token: seated while seats are left
    CHECK(decide_join(q, r, seats).kind == JoinDecision::Kind::Spectate);
    q.has_client_id = false;  // no tokens: the spectator limit alone
    CHECK(decide_join(q, r, seats).kind == JoinDecision::Kind::Spectate);
  }

  TEST_CASE("admission: late joins take a vacated slot only when allowed, a rejoin needs the slot's secret") {
    using K = JoinDecision::Kind;
    std::vector<SeatView> seats{{true, false, "aaaa"}, {true, true, "bbbb"}};
    CHECK(decide_join(request(), rules(false), seats).reason == wire::RefuseReason::AlreadyStarted);
    auto late = rules(false);
    late.allow_late_join = true;
    const auto d = decide_join(request(), late, seats);
    CHECK(d.kind == K::LateJoin);
    CHECK(d.slot == 1);
    auto q = request();
    q.rejoin_secret = "bbbb";
    const auto back = decide_join(q, rules(false), seats);
    CHECK(back.kind == K::Rejoin);
    CHECK(back.slot == 1);
    CHECK(decide_join(q, rules(true), seats).kind == K::Refuse);  // not started: join normally
    q.rejoin_secret = "bbbc";
    CHECK(decide_join(q, rules(false), seats).detail == "unknown rejoin secret");
    CHECK(same_secret("abc", "abc"));
    CHECK_FALSE(same_secret("abc", "abd"));
    CHECK_FALSE(same_secret("abc", "abcd"));
  }

  TEST_CASE("admission: room for a new connection, its address's share, and who makes room when all are taken") {
    const std::uint32_t a = 0x0100000a, b = 0x0200000a, c = 0x0300000a, lo = 0x0100007f;  // 10.0.0.1.., 127.0.0.1
    const PendingLimits limits{4, 2, 1000 * kMs};
    std::vector<PendingView> pending{{1, a, false, 0, 5}, {2, a, false, 0, 5}};
    CHECK(make_room(pending, b, 10 * kMs, limits).admit);
    CHECK(make_room(pending, b, 10 * kMs, limits).evict == 0);
    CHECK_FALSE(make_room(pending, a, 10 * kMs, limits).admit);  // a holds its share of 2
    pending.push_back({3, lo, false, 0, 5});
    pending.push_back({4, lo, false, 0, 5});
    CHECK(make_room(pending, lo, 10 * kMs, limits).admit);  // loopback is held to no share; full, so a gives up its oldest
    CHECK(make_room(pending, lo, 10 * kMs, limits).evict == 1);
    // Full with one connection per address: the oldest silent for the idle bound goes, else none.
    pending = {{1, a, false, 0, 5}, {2, b, false, 0, 0}, {3, c, false, 900 * kMs, 0}, {4, lo, false, 0, 5}};
    CHECK(make_room(pending, 0x0400000a, 1500 * kMs, limits).evict == 2);
    CHECK_FALSE(make_room(pending, 0x0400000a, 500 * kMs, limits).admit);  // nobody idle long enough: turned away
    // A connection already answered and closing gives up its place first.
    pending[2].closing = true;
    CHECK(make_room(pending, 0x0400000a, 500 * kMs, limits).evict == 3);
    // Busy connections from as many addresses (each sent something) hold their places no longer
    // than stale_ns, and one that misbehaved gives its place up at once.
    PendingLimits stale = limits;
    stale.stale_ns = 3000 * kMs;
    std::vector<PendingView> busy{{1, a, false, 0, 5}, {2, b, false, 100 * kMs, 105}, {3, c, false, 200 * kMs, 205},
                                  {4, 0x0400000a, false, 300 * kMs, 305}};
    CHECK_FALSE(make_room(busy, 0x0500000a, 2000 * kMs, stale).admit);
    CHECK(make_room(busy, 0x0500000a, 3001 * kMs, stale).evict == 1);
    busy[2].misbehaved = true;
    CHECK(make_room(busy, 0x0500000a, 400 * kMs, stale).evict == 3);
  }

  TEST_CASE("admission: a connect token is bound to the address that first used it, and the ledger stays bounded") {
    TokenLedger ledger;
    TokenLedger::Nonce n1{}, n2{};
    n1[0] = 1;
    n2[0] = 2;
    const auto nobody_seated = [](std::uint64_t) { return false; };
    CHECK(ledger.claim(n1, 10, 100, 7, 50, nobody_seated) == TokenLedger::Claim::Ok);
    CHECK(ledger.claim(n1, 10, 100, 7, 50, nobody_seated) == TokenLedger::Claim::Ok);      // the same address again
    CHECK(ledger.claim(n1, 11, 100, 7, 50, nobody_seated) == TokenLedger::Claim::InUse);   // a replay from another
    CHECK(ledger.claim(n2, 11, 100, 8, 50, nobody_seated) == TokenLedger::Claim::Ok);
    CHECK(ledger.size() == 2);
    // Full: expired tokens without a seat are forgotten to make room; good or seated ones stay.
    TokenLedger full;
    for (std::size_t i = 0; i < TokenLedger::kMaxUses; ++i) {
      TokenLedger::Nonce n{};
      n[0] = static_cast<std::uint8_t>(i);
      n[1] = static_cast<std::uint8_t>(i >> 8);
      n[2] = 0xaa;
      REQUIRE(full.claim(n, 1, i % 2 == 0 ? 40 : 100, i, 30, nobody_seated) == TokenLedger::Claim::Ok);
    }
    const auto client_0_seated = [](std::uint64_t client) { return client == 0; };
    CHECK(full.claim(n1, 1, 100, 9999, 30, client_0_seated) == TokenLedger::Claim::Full);  // nothing expired yet
    CHECK(full.claim(n1, 1, 100, 9999, 50, client_0_seated) == TokenLedger::Claim::Ok);    // the even ones expired at 40
    CHECK(full.size() == TokenLedger::kMaxUses / 2 + 2);  // the odd ones, seated client 0's, and the new one
  }

  TEST_CASE("input window: arrivals, slack, the acknowledgement and fills by cause") {
    InputWindow w(1);
    const std::int64_t deadline5 = 1000 * kMs;  // tick 5's deadline; tick 6's is 10 ms later
    const Packed two(lockstep::testing::Ticks{{10}, {20}});
    // Ticks 5 and 6 arrive 4 ms before tick 5's deadline.
    CHECK(receive(w, 5, two, 5, deadline5, deadline5 - 4 * kMs));
    CHECK(w.has(5));
    CHECK(w.has(6));
    CHECK(w.ack() == 0);  // 1..4 are not in
    CHECK(w.slack_tick() == 5);  // the worst of the new ones
    CHECK(w.slack_us() == 4000);
    CHECK(w.take(5, deadline5, 30'000, deadline5) == InputWindow::Fill::None);
    CHECK(w.last()[0] == 10);
    CHECK(w.ack() == 6);  // 5 settled, 6 in
    CHECK(w.latency().count() == 1);
    CHECK(w.take(6, deadline5 + 10 * kMs, 0, deadline5) == InputWindow::Fill::None);
    // Tick 7 never comes but 8 does: lost. Tick 9: nothing newer seen yet: late.
    const Packed eight(lockstep::testing::Ticks{{80}});
    CHECK(receive(w, 8, eight, 7, deadline5 + 20 * kMs, deadline5 + 15 * kMs));
    CHECK(w.take(7, deadline5 + 20 * kMs, 0, deadline5 + 15 * kMs) == InputWindow::Fill::Lost);
    CHECK(w.last()[0] == 20);  // the previous input repeated
    CHECK(w.take(8, deadline5 + 30 * kMs, 0, deadline5 + 15 * kMs) == InputWindow::Fill::None);
    CHECK(w.take(9, deadline5 + 40 * kMs, 0, deadline5 + 15 * kMs) == InputWindow::Fill::Late);
    // Nothing heard for more than the silent bound.
    CHECK(w.take(10, deadline5 + 600 * kMs, 0, deadline5 + 15 * kMs) == InputWindow::Fill::Silent);
    CHECK(w.fills_lost() == 1);
    CHECK(w.fills_late() == 1);
    CHECK(w.fills_silent() == 1);
    CHECK(w.ack() == 10);
    // Too far ahead is refused; already assembled is ignored.
    CHECK_FALSE(receive(w, 11 + InputWindow::kSize, eight, 11, deadline5, deadline5));
    CHECK(receive(w, 3, eight, 11, deadline5, deadline5));
    CHECK_FALSE(w.has(3));
  }

  TEST_CASE("input window: commands are delivered once and in order, late ones with the next tick, a tick's limits kept") {
    using lockstep::testing::Ticks;
    InputWindow w(0);  // a game without per-tick input: only commands
    const std::int64_t t0 = 1000 * kMs;
    auto cmd = [](std::uint8_t tag, std::size_t size = 1) { return std::vector<std::uint8_t>(size, tag); };
    auto taken = [&w] {
      std::vector<std::uint8_t> tags;
      for (std::size_t i = 0; i < w.commands().size(); ++i) tags.push_back(w.commands().at(i)[0]);
      return tags;
    };
    // Tick 1 brings A and B; it arrives twice (redundancy): each is delivered once.
    Ticks one{{}};
    one.command(0, cmd('A')).command(0, cmd('B'));
    CHECK(receive(w, 1, Packed(one), 1, t0, t0 - kMs));
    CHECK(receive(w, 1, Packed(one), 1, t0, t0 - kMs));
    CHECK(w.take(1, t0, 0, t0) == InputWindow::Fill::None);
    CHECK(taken() == std::vector<std::uint8_t>{'A', 'B'});
    CHECK(receive(w, 1, Packed(one), 2, t0, t0));  // a copy after its tick: not again
    // Tick 2 is filled (nothing came); its command C arrives afterwards, twice, with tick 3's D.
    CHECK(w.take(2, t0 + 10 * kMs, 0, t0) == InputWindow::Fill::Late);
    CHECK(taken().empty());
    Ticks late{{}, {}};
    late.command(0, cmd('C')).command(1, cmd('D'));
    CHECK(receive(w, 2, Packed(late), 3, t0 + 20 * kMs, t0 + 15 * kMs));
    CHECK(receive(w, 2, Packed(late), 3, t0 + 20 * kMs, t0 + 16 * kMs));
    CHECK(w.take(3, t0 + 20 * kMs, 0, t0 + 16 * kMs) == InputWindow::Fill::None);
    CHECK(taken() == std::vector<std::uint8_t>{'C', 'D'});  // C first: issued first
    CHECK(w.commands_carried() == 1);
    // Over a tick's byte limit: 2 x 300 bytes on tick 4, the second goes with tick 5.
    Ticks big{{}};
    big.command(0, cmd('E', 300));
    Ticks big2{{}};
    big2.command(0, cmd('F', 300));
    CHECK(receive(w, 4, Packed(big), 4, t0 + 30 * kMs, t0 + 25 * kMs));
    CHECK(w.take(4, t0 + 30 * kMs, 0, t0 + 25 * kMs) == InputWindow::Fill::None);
    // F is late for tick 5 (filled), carried to 6 with 6's own G.
    CHECK(w.take(5, t0 + 40 * kMs, 0, t0 + 25 * kMs) == InputWindow::Fill::Late);
    Ticks g{{}, {}};
    g.items[0] = big2.items[0];
    g.command(1, cmd('G', 300));
    CHECK(receive(w, 5, Packed(g), 6, t0 + 50 * kMs, t0 + 45 * kMs));
    CHECK(w.take(6, t0 + 50 * kMs, 0, t0 + 45 * kMs) == InputWindow::Fill::None);
    CHECK(taken() == std::vector<std::uint8_t>{'F'});  // F and G together are over 512 bytes
    CHECK(w.take(7, t0 + 60 * kMs, 0, t0 + 45 * kMs) == InputWindow::Fill::Late);
    CHECK(taken() == std::vector<std::uint8_t>{'G'});
    // A player out of the session loses what was waiting.
    Ticks h{{}};
    h.command(0, cmd('H'));
    CHECK(receive(w, 7, Packed(h), 8, t0 + 70 * kMs, t0 + 65 * kMs));
    w.reset_last();
    CHECK(w.take(8, t0 + 70 * kMs, 0, t0 + 65 * kMs) == InputWindow::Fill::Late);
    CHECK(taken().empty());
  }

  TEST_CASE("hash ledger: verdicts and an acknowledgement that stops at the first gap") {
    HashLedger h;
    CHECK(h.check(0, 10) == HashLedger::Verdict::Already);
    CHECK(h.check(11, 10) == HashLedger::Verdict::Future);
    CHECK(h.check(3, 10) == HashLedger::Verdict::Compare);
    h.mark(1);
    h.mark(2);
    h.mark(4);
    h.advance(10, 77);
    CHECK(h.ack() == 2);
    CHECK(h.moved_at() == 77);
    CHECK(h.check(4, 10) == HashLedger::Verdict::Already);
    h.mark(3);
    h.advance(10, 88);
    CHECK(h.ack() == 4);
    CHECK(h.check(5, 5000) == HashLedger::Verdict::TooOld);
  }

  TEST_CASE("gap resend: only after the acknowledgement stood still for a round trip and more, at most every interval") {
    GapResend g;
    const std::int64_t rtt = 50 * kMs;
    CHECK_FALSE(g.due(140 * kMs, 0, rtt));  // 140 ms still: not yet (50 + 100)
    CHECK(g.due(160 * kMs, 0, rtt));
    CHECK_FALSE(g.due(200 * kMs, 0, rtt));  // sent 40 ms ago
    CHECK(g.due(261 * kMs, 0, rtt));
    CHECK_FALSE(g.due(400 * kMs, 300 * kMs, rtt));  // it moved 100 ms ago
  }

  TEST_CASE("tick clock: the least-delayed arrival sets the origin, and the server's shift moves it") {
    TickClock c;
    CHECK_FALSE(c.known());
    c.start(1000 * kMs);
    CHECK(c.due_at(3) == 1030 * kMs);
    c.earlier_start(990 * kMs);
    CHECK(c.origin() == 990 * kMs);
    c.earlier_start(995 * kMs);  // later: ignored
    CHECK(c.origin() == 990 * kMs);
    c.frames_arrived(1000 * kMs + 5 * 10 * kMs, 5, 0);  // 10 ms later than the origin says
    CHECK(c.origin() == 990 * kMs);
    c.frames_arrived(985 * kMs + 6 * 10 * kMs, 6, 0);  // 5 ms earlier
    CHECK(c.origin() == 985 * kMs);
    c.shifted(2);
    c.shifted(1);  // an older datagram
    CHECK(c.shift() == 2);
    CHECK(c.due_at(0) == 1005 * kMs);
  }

  TEST_CASE("frame intake: out-of-order and duplicate frames, released in order") {
    FrameIntake in;
    auto frame = [](Tick t) {
      InputFrame f;
      f.tick = t;
      f.present = 1;
      return f;
    };
    CHECK(in.add(frame(2), 0));
    CHECK(in.received() == 0);
    CHECK(in.add(frame(1), 0));
    CHECK(in.received() == 2);
    CHECK_FALSE(in.add(frame(2), 0));  // a copy
    CHECK_FALSE(in.wants(FrameIntake::kRing, 0));  // beyond the buffer
    CHECK(in.at(1).tick == 1);
    in.release(1);
    in.reset(50);
    CHECK(in.received() == 50);
    CHECK(in.add(frame(51), 50));
    CHECK(in.received() == 51);
  }

  TEST_CASE("desync localizer: two simulations and no network, a one-ULP change named by entity and field") {
    const WorldParams world = arena_world(7, 40, 2);
    auto ours = stepped_arena(world, 30);
    auto theirs = ours->clone();
    theirs->perturb(2 * 42 + 17);  // 42 entities (40 bodies, 2 players): entity 17's vx
    DesyncReport base;
    base.tick = ours->tick();
    base.server_hash = ours->hash();
    base.client_hash = theirs->hash();
    REQUIRE(base.server_hash != base.client_hash);
    DesyncLocalizer loc;
    auto outcome = loc.start(base, ours.get(), 0);
    int questions = 0;
    while (outcome == DesyncLocalizer::Outcome::Ask) {
      ProbeAnswer a;
      REQUIRE(answer_probe(loc.question(), theirs.get(), &a));
      outcome = loc.answer(a, 100, ours.get());
      ++questions;
    }
    REQUIRE(outcome == DesyncLocalizer::Outcome::Done);
    const DesyncReport& r = loc.report();
    CHECK(questions == 3);  // blocks, entities, fields
    CHECK(r.where == "entity");
    CHECK(r.entity == 17);
    REQUIRE(r.server_fields.size() == 1);
    CHECK(r.server_fields[0].name == "vx");
    CHECK((r.client_fields[0].bits ^ r.server_fields[0].bits) == 1u);
    CHECK(r.probe_bytes == 300);
    CHECK(r.state_bytes > 0);
    CHECK_FALSE(loc.active());
  }

  TEST_CASE("localize_locally: a relay's desynced peer names the entity and field against the majority's state") {
    const WorldParams world = arena_world(7, 40, 2);
    auto majority = stepped_arena(world, 30);
    auto own = majority->clone();
    own->perturb(2 * 42 + 5);  // entity 5's vx
    DesyncReport base;
    base.tick = majority->tick();
    const DesyncReport r = localize_locally(base, *majority, *own);
    CHECK(r.where == "entity");
    CHECK(r.entity == 5);
    REQUIRE(r.server_fields.size() == 1);
    CHECK(r.server_fields[0].name == "vx");
    CHECK(r.server_fields[0].bits == majority->entity_fields(5)[2].bits);  // the reference's value as the server's
    CHECK((r.client_fields[0].bits ^ r.server_fields[0].bits) == 1u);
    // Equal states: nothing differs anywhere.
    const DesyncReport same = localize_locally(base, *majority, *majority);
    CHECK(same.server_fields.empty());
  }

  TEST_CASE("desync localizer: a state no longer held, an unasked answer and a peer without the tick") {
    auto sim = make_arena(arena_world(1, 10, 1));
    DesyncLocalizer loc;
    DesyncReport base;
    base.tick = 5;
    CHECK(loc.start(base, nullptr, 0) == DesyncLocalizer::Outcome::Done);
    CHECK(loc.report().note.find("server no longer holds") != std::string::npos);
    base.tick = 0;
    REQUIRE(loc.start(base, sim.get(), 0) == DesyncLocalizer::Outcome::Ask);
    ProbeAnswer wrong;
    wrong.tick = 0;
    wrong.level = wire::ProbeLevel::Fields;
    CHECK(loc.answer(wrong, 10, sim.get()) == DesyncLocalizer::Outcome::Unasked);
    ProbeAnswer gone;
    REQUIRE(answer_probe(loc.question(), nullptr, &gone));
    CHECK(loc.answer(gone, 10, sim.get()) == DesyncLocalizer::Outcome::Done);
    CHECK(loc.report().note.find("client no longer holds") != std::string::npos);
    ProbeAnswer out;
    CHECK_FALSE(answer_probe(ProbeQuestion{0, wire::ProbeLevel::Fields, 999, 1, 64}, sim.get(), &out));
    CHECK_FALSE(answer_probe(ProbeQuestion{0, wire::ProbeLevel::Blocks, 0, 0, 0}, sim.get(), &out));
  }

  TEST_CASE("desync localizer: an entity held by one side only is named as such, either way round") {
    // Tiny worlds of 3 and 4 walkers at tick 0: the first three are alike, the fourth is held by
    // one side only, as if one side had created an entity the other had not.
    auto fewer = lockstep::testing::make_tiny_sim(WorldParams{{}, 3});
    auto more = lockstep::testing::make_tiny_sim(WorldParams{{}, 4});
    REQUIRE(fewer->entity_count() + 1 == more->entity_count());
    for (auto* pair : {&fewer, &more}) {
      Simulation& server = **pair;
      Simulation& client = pair == &fewer ? *more : *fewer;
      const DesyncReport r = lockstep::testing::localize(server, client);
      CAPTURE(r.note);
      CHECK(r.where == "entity count");
      CHECK(r.entity == static_cast<std::int64_t>(fewer->entity_count()));
      CHECK(r.note.find(pair == &fewer ? "the client holds entity" : "the server holds entity") != std::string::npos);
    }
  }

  TEST_CASE("every printable name round-trips through the JSON the executables print") {
    std::string all;
    for (char c = 0x20; c < 0x7f; ++c) all += c;
    for (std::size_t at = 0; at < all.size(); at += protocol::kMaxNameBytes) {
      protocol::SeatStatus seat;
      seat.name = all.substr(at, protocol::kMaxNameBytes);
      REQUIRE(protocol::valid_name(seat.name));
      protocol::Status st;
      st.phase = seat.name;
      st.seats.push_back(seat);
      const Json back = json_parse(json_text(status_json(st)));
      REQUIRE_FALSE(back.is_discarded());
      CHECK(back["seats"][0]["name"] == seat.name);
      CHECK(back["phase"] == seat.name);
    }
    // Bytes that are not UTF-8 (a hostile server's phase, a crafted replay's names) still give JSON.
    protocol::Status hostile;
    hostile.phase = std::string("\xff\xfe\x01\"", 4);
    CHECK_FALSE(json_parse(json_text(status_json(hostile))).is_discarded());
  }
}
