// libFuzzer target: the message decoder, both play-message decoders (docs/PROTOCOL.md §6.6),
// the server's handling of whatever a joined player sends, in the clear and sealed (§4.7), the
// connect token readers (§4.6), the replay and desync bundle readers, and the simulation's state loader. Build: tools/fuzz.sh (clang, -fsanitize=fuzzer,
// address,undefined). LOCKSTEP_FUZZ_WRITE_SEEDS=DIR writes the seed corpus and exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/log.hpp"
#include "lockstep/packet_seal.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/version.hpp"
#include "session_testing.hpp"

using namespace lockstep;

namespace {

struct Harness {
  std::unique_ptr<ServerSession> server;
  std::unique_ptr<Simulation> scratch;
  std::uint32_t player = 0, other = 0;
  std::int64_t now = 1'000'000'000;
  Harness() {
    log_setup("fuzz", LogLevel::Error);
    ServerConfig cfg;
    cfg.port = 0;
    cfg.players = 2;
    cfg.world = arena_world(1, 32, cfg.players);
    cfg.factory = make_arena;
    cfg.start_delay_ns = 0;
    cfg.input_grace_ns = 0;
    cfg.max_bad_messages = UINT32_MAX;     // keep the fuzzed peer joined, whatever it sends
    cfg.max_messages_per_second = 1e12;
    cfg.message_burst = 1e12;
    cfg.silent_drop_ns = INT64_MAX / 4;
    cfg.desync_dir = "/tmp";
    cfg.desync_bundles = false;  // the reports are enough here; a bundle per fuzzed desync is only disk traffic
    Error err;
    server = ServerSession::create(cfg, &err);
    if (!server) std::abort();
    scratch = make_arena(cfg.world);
    const auto fp = scratch->fingerprint();
    player = SessionTesting::attach_peer(*server, now);
    other = SessionTesting::attach_peer(*server, now);
    SessionTesting::receive(*server, player, protocol::join_request(kProtocolVersion, fp, "", "fuzz", false), 0, now);
    SessionTesting::receive(*server, other, protocol::join_request(kProtocolVersion, fp, "", "other", false), 0, now);
    server->update(now);
    // A server that takes connect tokens, and a player on it whose messages are sealed: the
    // fuzzer's bytes reach it raw (they must fail to open) and sealed with its keys (they open,
    // then meet the decoders as a sealed connection's messages do).
    ServerConfig sealed_cfg = cfg;
    sealed_cfg.token_key = token_key;
    sealed = ServerSession::create(sealed_cfg, &err);
    if (!sealed) std::abort();
    const SecretKey c2s = random_key(), s2c = random_key();
    const std::uint8_t nonce[kServerNonceBytes] = {1};
    client_seal = std::make_unique<PacketSeal>(derive_connection_keys(c2s, s2c, nonce, false));
    sealed_player = SessionTesting::attach_sealed_peer(*sealed, now, derive_connection_keys(c2s, s2c, nonce, true), 7);
    sealed_other = SessionTesting::attach_peer(*sealed, now);
    std::vector<std::uint8_t> join;
    client_seal->seal(Channel::Control, protocol::join_request(kProtocolVersion, fp, "", "fuzz", false), join);
    SessionTesting::receive(*sealed, sealed_player, join, 0, now);
    sealed->update(now);
  }
  SecretKey token_key = random_key();
  std::unique_ptr<ServerSession> sealed;
  std::unique_ptr<PacketSeal> client_seal;
  std::uint32_t sealed_player = 0, sealed_other = 0;
};

Harness& harness() {
  static Harness h;
  return h;
}

void write_seed(const std::string& dir, const std::string& name, const protocol::Bytes& b) {
  std::ofstream(dir + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                                           static_cast<std::streamsize>(b.size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("LOCKSTEP_FUZZ_WRITE_SEEDS")) {
    std::vector<PlayerTick> ticks(3, PlayerTick{std::vector<std::uint8_t>(2, 0), {}});
    for (int i = 0; i < 3; ++i) bot_input(1, static_cast<Tick>(5 + i)).encode(ticks[i].input);
    ticks[1].commands.add(std::vector<std::uint8_t>{3, 1, 2, 3});  // a command the arena ignores
    const std::vector<const PlayerTick*> in{&ticks[0], &ticks[1], &ticks[2]};
    const std::uint64_t hashes[2] = {0x1234, 0x5678};
    write_seed(dir, "join", protocol::join_request(kProtocolVersion, 1, "token", "name", false, "secret"));
    protocol::ClientPlay up;
    up.frame_ack = 3;
    up.input_first_tick = 5;
    up.input_count = 3;
    pack_ticks(in, up.inputs);
    up.hash_first_tick = 2;
    up.hashes.assign(hashes, hashes + 2);
    up.has_lead = true;
    up.lead_us = 12'345;
    write_seed(dir, "client_play", protocol::client_play(up));
    write_seed(dir, "leave", protocol::leave("bye"));
    {  // a replay with keyframes, less its signature (the target puts it back)
      const auto rb = replay_bytes(scenario_replay(golden_scenario(arena_module()), 120, 50));
      write_seed(dir, "replay", protocol::Bytes(rb.begin() + 8, rb.end()));
    }
    write_seed(dir, "detail", protocol::desync_detail(3, wire::ProbeLevel::Blocks, 0, true, hashes, {}));
    write_seed(dir, "refuse", protocol::refuse(wire::RefuseReason::Full, "full"));
    // Frames 4 and 5 of two slots against base frame 3, slot 1 filled on 5, a command on 4.
    InputFrame base, f4, f5;
    base.reset(3, 2, 2);
    base.present = 3;
    f4 = base;
    f4.tick = 4;
    f4.inputs = {1, 0, 0, 2};
    Commands c;
    c.add(std::vector<std::uint8_t>{3, 1, 2, 3});
    f4.add_commands(0, c);
    f5.reset(5, 2, 2);
    f5.present = 3;
    f5.filled = 2;
    f5.inputs = {1, 0, 0, 2};
    const InputFrame* frames[2] = {&f4, &f5};
    protocol::ServerPlayHeader h{.input_ack = 3, .hash_ack = 3, .has_slack = true, .input_slack_us = 100,
                                 .slack_tick = 1, .clock_shift = 0};
    write_seed(dir, "server_play", protocol::server_play(frames, &base, h));
    TokenRequest q;
    q.client_id = 7;
    q.servers.push_back({{127, 0, 0, 1}, 7777});
    q.user_data = {1, 2, 3};
    ConnectToken t;
    std::string why;
    if (mint_connect_token(q, random_key(), &t, &why)) {
      write_seed(dir, "token_sealed", t.sealed);
      write_seed(dir, "token_file", write_connect_token(t));
      write_seed(dir, "connect_request", protocol::connect_request(t.sealed));
    }
    write_seed(dir, "status_request", protocol::status_request(status_key_proof(random_key(), 1), 64));
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Harness& h = harness();
  const std::span<const std::uint8_t> bytes(data, size);
  // 1. The decoder on its own.
  protocol::DecodeError err;
  (void)protocol::decode(bytes, &err, protocol::kMaxSnapshotBytes);
  thread_local protocol::ClientPlay up;
  (void)protocol::decode_client_play(bytes, 2, up);
  thread_local protocol::ServerPlay down;
  thread_local InputFrame base = [] {
    InputFrame f;
    f.reset(3, 2, 2);
    f.present = 3;
    return f;
  }();
  const auto base_of = [](Tick t) -> const InputFrame* { return t == base.tick ? &base : nullptr; };
  if (protocol::decode_server_play(bytes, 2, 2, base_of, down) == protocol::DecodeError::None)
    protocol::read_frames(down, 2, 2, [](const InputFrame&) {});
  // 1b. The replay and bundle readers, the bytes as they are and after each one's signature.
  {
    Replay r;
    DesyncBundle b;
    std::string why2;
    (void)parse_replay(bytes, &r, &why2, {static_cast<Tick>(size), 0});
    (void)parse_bundle(bytes, &b, &why2);
    thread_local std::vector<std::uint8_t> framed;
    for (const char* magic : {"LSREPLAY", "LSDESYNC"}) {
      framed.assign(magic, magic + 8);
      framed.insert(framed.end(), bytes.begin(), bytes.end());
      if (magic[2] == 'R') (void)parse_replay(framed, &r, &why2);
      else (void)parse_bundle(framed, &b, &why2);
    }
  }
  // 2. The server's handling, on both channels, with ticks running now and then.
  SessionTesting::receive(*h.server, h.player, bytes, 0, h.now);
  SessionTesting::receive(*h.server, h.player, bytes, 1, h.now);
  h.now += 3'000'000;
  h.server->update(h.now);
  // 3. Connect tokens: the server's opener (then the form checks past authentication cannot be
  // reached by random bytes: the unit tests cover those) and the player's file reader.
  OpenedToken opened;
  (void)open_connect_token(bytes, h.token_key, kDefaultProtocolId, 1'800'000'000, &opened);
  ConnectToken file;
  std::string why;
  (void)read_connect_token(bytes, &file, &why);
  std::array<std::uint8_t, 24> proof_nonce{};
  (void)check_status_proof(bytes, h.token_key, 1'800'000'000, &proof_nonce);
  // 4. The sealed player: the bytes raw (forged: dropped before decoding), then sealed with its
  // keys on both channels, and as the token of a ConnectRequest from a peer not joined.
  SessionTesting::receive(*h.sealed, h.sealed_player, bytes, 1, h.now);
  thread_local std::vector<std::uint8_t> sealed_bytes;
  h.client_seal->seal(Channel::Play, bytes, sealed_bytes);
  SessionTesting::receive(*h.sealed, h.sealed_player, sealed_bytes, 1, h.now);
  h.client_seal->seal(Channel::Control, bytes, sealed_bytes);
  SessionTesting::receive(*h.sealed, h.sealed_player, sealed_bytes, 0, h.now);
  h.sealed->update(h.now);
  // 5. The state loader: untrusted snapshot bytes.
  (void)h.scratch->deserialize(bytes);
  return 0;
}
