// The formats that come from outside: the wire decoder's answer to each kind of malformed
// message, the replay reader's failure branches and the golden replay read back, the hash log,
// and the desync helpers the reports are built from.
#include <doctest/doctest.h>
#include <flatbuffers/flatbuffers.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/bytes.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/version.hpp"

#include "support/files.hpp"

using namespace lockstep;
using lockstep::testing::slurp;
using lockstep::testing::spit;
using protocol::Bytes;
using protocol::DecodeError;

namespace {

namespace fs = std::filesystem;

// A Message around a body built by `build`, for shapes the protocol's builders never produce.
template <class Build>
Bytes raw_message(wire::Body type, Build build) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto body = build(fbb);
  fbb.Finish(wire::CreateMessage(fbb, type, body), wire::MessageIdentifier());
  return Bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("lockstep-formats-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST_SUITE("core/formats") {
  TEST_CASE("the decoder answers each kind of malformed message with its error") {
    struct Case {
      const char* what;
      Bytes bytes;
      std::size_t max_bytes;
      DecodeError want;
    };
    Bytes join = protocol::join_request(kProtocolVersion, 1, "", "ann", false);
    Bytes renamed = join;
    renamed[4] ^= 0xff;  // the file identifier
    Bytes truncated(join.begin(), join.end() - 6);
    const std::vector<std::uint8_t> chunk(100, 7);
    const std::vector<Case> cases{
        {"a valid join", join, protocol::kMaxMessageBytes, DecodeError::None},
        {"larger than the cap", Bytes(protocol::kMaxMessageBytes + 1, 0), protocol::kMaxMessageBytes, DecodeError::TooLarge},
        {"shorter than a header", Bytes{1, 2, 3, 4}, protocol::kMaxMessageBytes, DecodeError::NotFlatBuffer},
        {"another file identifier", renamed, protocol::kMaxMessageBytes, DecodeError::NotFlatBuffer},
        {"cut short", truncated, protocol::kMaxMessageBytes, DecodeError::NotFlatBuffer},
        {"no body", raw_message(wire::Body::NONE, [](auto&) { return flatbuffers::Offset<void>(); }),
         protocol::kMaxMessageBytes, DecodeError::NoBody},
        {"a 33-byte name", protocol::join_request(kProtocolVersion, 1, "", std::string(33, 'a'), false),
         protocol::kMaxMessageBytes, DecodeError::FieldOutOfRange},
        {"a welcome with slot 2 of 2",
         protocol::welcome(2, 2, 0, arena_world(1, 0, 2), {}), protocol::kMaxMessageBytes, DecodeError::FieldOutOfRange},
        {"a start 11 s away", protocol::start(11'000'000), protocol::kMaxMessageBytes, DecodeError::FieldOutOfRange},
        {"a ServerTick of protocol 6 (now ServerPlay)",
         raw_message(wire::Body::ServerTick,
                     [](flatbuffers::FlatBufferBuilder& fbb) {
                       const std::vector<std::uint32_t> one{1};
                       return wire::CreateServerTickDirect(fbb, 1, &one, &one).Union();
                     }),
         protocol::kMaxMessageBytes, DecodeError::FieldOutOfRange},
        {"a snapshot chunk past its total",
         raw_message(wire::Body::Snapshot,
                     [&](flatbuffers::FlatBufferBuilder& fbb) {
                       return wire::CreateSnapshotDirect(fbb, 1, 0, 1, 150, 80, &chunk).Union();
                     }),
         protocol::kMaxDetailMessageBytes, DecodeError::FieldOutOfRange},
        {"a Blocks probe with blocks of no entities",
         protocol::desync_probe(5, wire::ProbeLevel::Blocks, 0, 0, 0), protocol::kMaxMessageBytes, DecodeError::FieldOutOfRange},
        {"a Fields probe, whose block size is not used", protocol::desync_probe(5, wire::ProbeLevel::Fields, 3, 1, 0),
         protocol::kMaxMessageBytes, DecodeError::None},
        {"a large message that is not a detail or snapshot",
         protocol::player_left(0, 1, std::string(200, 'x')), 100, DecodeError::TooLarge},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      DecodeError err = DecodeError::None;
      const wire::Message* m = protocol::decode(c.bytes, &err, c.max_bytes);
      CHECK(err == c.want);
      CHECK((m != nullptr) == (c.want == DecodeError::None));
    }
  }

  TEST_CASE("the replay reader names each fault of a file, and reads back the golden replay") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 150);
    const fs::path good = temp_file("good.replay");
    std::string error;
    REQUIRE(write_replay(good.string(), r, &error));
    Replay back;
    std::string detail;
    REQUIRE(read_replay(good.string(), &back, &detail) == ReplayError::None);
    CHECK(back.frames == r.frames);
    CHECK(back.hashes == r.hashes);
    CHECK(back.header.names == r.header.names);
    const auto bytes = slurp(good);
    const auto fault = [&](const std::vector<std::uint8_t>& b, ReplayError want, const char* says) {
      const fs::path p = temp_file("bad.replay");
      spit(p, b);
      Replay out;
      std::string why;
      CHECK(read_replay(p.string(), &out, &why) == want);
      CHECK_MESSAGE(why.find(says) != std::string::npos, why);
      fs::remove(p);
    };
    Replay none;
    CHECK(read_replay(temp_file("missing").string(), &none, &detail) == ReplayError::CannotOpen);
    auto b = bytes;
    b[0] = 'X';
    fault(b, ReplayError::NotAReplay, "LSREPLAY");
    fault({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2)}, ReplayError::Truncated,
          "truncated");
    b = bytes;
    b[bytes.size() / 2] ^= 0x10;
    fault(b, ReplayError::Corrupt, "checksum mismatch");
    b = bytes;
    b.insert(b.end(), bytes.begin() + 8, bytes.begin() + 40);
    fault(b, ReplayError::Corrupt, "after the end record");
    fs::remove(good);

    // A replay of format 1 is refused, and the message says what to do.
    Replay old;
    CHECK(read_replay(LOCKSTEP_GOLDEN_DIR "/format1.replay", &old, &detail) == ReplayError::Unsupported);
    CHECK_MESSAGE(detail.find("format version 1 is not supported") != std::string::npos, detail);
    CHECK_MESSAGE(detail.find("record the session again") != std::string::npos, detail);
    CHECK(read_replay(LOCKSTEP_GOLDEN_DIR "/format2.replay", &old, &detail) == ReplayError::Unsupported);
    CHECK_MESSAGE(detail.find("format version 2 is not supported") != std::string::npos, detail);

    // The golden replay is a regression anchor (tests/golden/README.md): it reads back whole.
    Replay golden;
    REQUIRE(read_replay(LOCKSTEP_GOLDEN_DIR "/golden.replay", &golden, &detail) == ReplayError::None);
    CHECK(golden.complete);
    CHECK(golden.frames.size() == 3000);
    CHECK(golden.header.world.settings == golden_scenario(arena_module()).world.settings);
    CHECK(golden.header.world.players == golden_scenario(arena_module()).world.players);
    CHECK(golden.frames.front().tick == 1);
    CHECK(golden.frames.back().tick == 3000);
    CHECK(golden.header.module == "arena");
    CHECK(golden.header.input_size == 2);
    // The skirmish's golden replay carries its commands and reads back whole too.
    Replay sk;
    REQUIRE(read_replay(LOCKSTEP_GOLDEN_DIR "/skirmish.replay", &sk, &detail) == ReplayError::None);
    CHECK(sk.header.module == "skirmish");
    CHECK(sk.header.input_size == 0);
    std::size_t commands = 0;
    for (const InputFrame& f : sk.frames) commands += f.commands.size();
    CHECK(commands > 50);
    CHECK(sk.frames == scenario_replay(golden_scenario(skirmish_module()), 3000).frames);
  }

  TEST_CASE("the hash log writes what the parser reads, appends on request, and the parser refuses the rest") {
    const fs::path p = temp_file("hashes.log");
    {
      HashLogWriter w;
      REQUIRE(w.open(p.string()));
      w.write(1, 0x0123456789abcdefull);
      w.write(7, 0xffffffffffffffffull);
    }
    {
      HashLogWriter w;
      REQUIRE(w.open(p.string(), /*append=*/true));
      w.write(4294967295u, 0);
    }
    std::ifstream in(p);
    std::vector<TickHash> read;
    for (std::string line; std::getline(in, line);) {
      const auto th = parse_hash_line(line);
      REQUIRE_MESSAGE(th.has_value(), line);
      read.push_back(*th);
    }
    CHECK(read == std::vector<TickHash>{{1, 0x0123456789abcdefull}, {7, 0xffffffffffffffffull}, {4294967295u, 0}});
    fs::remove(p);
    for (const char* bad : {"", "1", "1 0123456789abcde", "1 0123456789abcdef0", "1 0123456789ABCDEF", " 1 0123456789abcdef",
                            "x 0123456789abcdef", "4294967296 0123456789abcdef", "1  123456789abcdef"}) {
      CAPTURE(bad);
      CHECK_FALSE(parse_hash_line(bad).has_value());
    }
    HashLogWriter nowhere;
    CHECK_FALSE(nowhere.open("/nonexistent-dir/x.log"));
  }

  // A client that loads an older state and steps again (a relay-mode resync from a peer's state)
  // writes ticks again: each tick stays in the log once, with its last hash.
  TEST_CASE("the hash log holds each tick once: a tick written again replaces its line and those after it") {
    const fs::path p = temp_file("rewritten.log");
    auto read_back = [&] {
      std::ifstream in(p);
      std::vector<TickHash> read;
      for (std::string line; std::getline(in, line);) read.push_back(parse_hash_line(line).value());
      return read;
    };
    {
      HashLogWriter w;
      REQUIRE(w.open(p.string()));
      for (Tick t = 1; t <= 10; ++t) w.write(t, t);
      for (Tick t = 6; t <= 12; ++t) w.write(t, 100 + t);  // back to 6: 6..10 again, then on
      w.write(20, 20);  // a jump ahead (a state of a later tick loaded)
      w.write(15, 115);  // inside the gap: 20 goes, 15 follows 12
      CHECK(w.unreplaced() == 0);
    }
    std::vector<TickHash> want;
    for (Tick t = 1; t <= 5; ++t) want.push_back({t, t});
    for (Tick t = 6; t <= 12; ++t) want.push_back({t, 100u + t});
    want.push_back({15, 115});
    CHECK(read_back() == want);
    {
      HashLogWriter w;  // a rejoin appends, and may go back too
      REQUIRE(w.open(p.string(), /*append=*/true));
      w.write(12, 212);
      w.write(13, 213);
    }
    want.pop_back();
    want.back() = {12, 212};
    want.push_back({13, 213});
    CHECK(read_back() == want);
    fs::remove(p);
  }

  TEST_CASE("hexadecimal: every byte value round-trips, either case reads, odd lengths and other digits do not") {
    std::vector<std::uint8_t> all(256);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint8_t>(i);
    const std::string text = bytes_hex(all);
    CHECK(text.size() == 512);
    CHECK(text.substr(0, 8) == "00010203");
    CHECK(text.substr(504) == "fcfdfeff");
    std::vector<std::uint8_t> back;
    REQUIRE(parse_bytes_hex(text, &back));
    CHECK(back == all);
    REQUIRE(parse_bytes_hex("DEADbeef\r\n", &back));
    CHECK(back == std::vector<std::uint8_t>{0xde, 0xad, 0xbe, 0xef});
    REQUIRE(parse_bytes_hex("", &back));
    CHECK(back.empty());
    for (const char* bad : {"abc", "0g", "+1", " 1", "1\n\n", "0x00", "\n\n"}) CHECK_MESSAGE(!parse_bytes_hex(bad, &back), bad);
  }

  TEST_CASE("the desync helpers: first differences, exact values, blocks") {
    CHECK(first_difference({1, 2, 3}, {1, 2, 3}) == -1);
    CHECK(first_difference({1, 2, 3}, {1, 9, 3}) == 1);
    CHECK(first_difference({1, 2}, {1, 2, 3}) == 2);
    CHECK(first_difference({}, {}) == -1);
    const float one_and_half = 1.5f;
    std::uint32_t bits;
    std::memcpy(&bits, &one_and_half, 4);
    const FieldValue f{"x", FieldValue::Kind::F32, bits};
    CHECK(field_hex(f) == "0x1.8p+0");
    CHECK(field_decimal(f) == "1.5");
    const FieldValue u{"n", FieldValue::Kind::U64, 42};
    CHECK(field_hex(u) == "0x2a");
    CHECK(field_decimal(u) == "42");
    CHECK(probe_block_size(10) == 64);
    CHECK(probe_block_size(1'000'000) == 1954);  // at most 512 blocks
    auto sim = make_arena(arena_world(3, 200, 2));
    CHECK(block_hashes(*sim, 64).size() == 4);  // 202 entities
    CHECK(entity_hashes(*sim, 200, 10).size() == 2);
    CHECK(field_bits(sim->entity_fields(0)).size() == sim->entity_fields(0).size());
  }
}
