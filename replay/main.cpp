// lockstep-replay: reads replay files. verify, info, trace, diff, state, compare; and record-scenario, which
// writes the shared scenario as a replay (how tests/golden/golden.replay was made).
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"
#include "lockstep/linked_module.hpp"
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "lockstep/bytes.hpp"
#include "lockstep/bisect.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_page.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

constexpr int kExitOk = 0, kExitBadInput = 2, kExitMismatch = 3;
bool g_any_build = false;  // --any-build: replay even with another build of a library the module links

// Loads a replay; on a fault prints the reason and returns false. An incomplete (crash-cut)
// replay is accepted when `allow_incomplete` is set and the fault is only the missing end.
// A desync bundle is read as the replay it holds.
bool load(const std::string& path, Replay* r, bool allow_incomplete = false, ReplayRange range = {}) {
  std::string detail;
  if (is_bundle_file(path)) {
    DesyncBundle b;
    if (read_bundle(path, &b, &detail) != ReplayError::None) {
      LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
      return false;
    }
    *r = std::move(b.replay);
    return true;
  }
  const ReplayError e = read_replay(path, r, &detail, range);
  if (e == ReplayError::None) return true;
  if (e == ReplayError::Truncated && allow_incomplete && !r->frames.empty()) {
    LOCKSTEP_LOG_WARN("%s: %s; using the %zu complete ticks", path.c_str(), detail.c_str(), r->frames.size());
    return true;
  }
  LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
  return false;
}

// A trace is a replay's recorded hashes or a hash log's lines, by tick.
bool load_trace(const std::string& path, std::map<Tick, std::uint64_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LOCKSTEP_LOG_ERROR("cannot open %s", path.c_str());
    return false;
  }
  char sig[8] = {};
  in.read(sig, 8);
  if (in.gcount() == 8 && std::string(sig, 8) == "LSREPLAY") {
    Replay r;
    if (!load(path, &r, true)) return false;
    for (std::size_t i = 0; i < r.frames.size(); ++i) (*out)[r.frames[i].tick] = r.hashes[i];
    return true;
  }
  in.clear();
  in.seekg(0);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto th = parse_hash_line(line);
    if (!th) {
      LOCKSTEP_LOG_ERROR("%s:%zu: not a replay and not a hash log line: '%.40s'", path.c_str(), n, line.c_str());
      return false;
    }
    (*out)[th->tick] = th->hash;
  }
  return true;
}

// The replay's world built by `module`, checked against what the replay recorded; nullptr (with
// the reason logged) when the module cannot build it or its inputs are of another size.
std::unique_ptr<Simulation> replay_world(const Module& module, const std::string& path, const Replay& r) {
  auto sim = module.create(r.header.world);
  if (!sim) {
    LOCKSTEP_LOG_ERROR("%s: the %.*s module cannot build this replay's world (%zu bytes of settings, %u players); "
                       "was it recorded with another --sim?",
                       path.c_str(), static_cast<int>(module.name.size()), module.name.data(),
                       r.header.world.settings.size(), r.header.world.players);
    return nullptr;
  }
  if (sim->input_size() != r.header.input_size) {
    LOCKSTEP_LOG_ERROR("%s: recorded with %u-byte inputs (module '%s'); the %.*s module's are %u bytes",
                       path.c_str(), r.header.input_size, r.header.module.c_str(), static_cast<int>(module.name.size()),
                       module.name.data(), sim->input_size());
    return nullptr;
  }
  // Another build of a linked library (a physics engine) is refused as a join would be: its results
  // differ from the recording's without any change to the module.
  if (!r.header.libraries.empty()) {
    const std::string why = library_difference(module.libraries, r.header.libraries, "this build", "the recording");
    if (!why.empty() && !g_any_build) {
      LOCKSTEP_LOG_ERROR("%s: refused: %s. --any-build replays it anyway, to find where the builds part", path.c_str(),
                         why.c_str());
      return nullptr;
    }
    if (!why.empty()) LOCKSTEP_LOG_WARN("%s: %s", path.c_str(), why.c_str());
  }
  if (sim->fingerprint() != r.header.fingerprint)
    LOCKSTEP_LOG_WARN("recorded with simulation fingerprint %s, this build has %s: results may differ",
                      hash_hex(r.header.fingerprint).c_str(), hash_hex(sim->fingerprint()).c_str());
  // Frames that start past tick 0 start from the keyframe of their tick (checked against its
  // recorded hash when read, and here once this build has loaded it).
  if (r.frames_from != 0) {
    const ReplayKeyframe* k = r.keyframe(r.frames_from);
    if (!k || !sim->deserialize(k->state) || sim->tick() != k->tick || sim->hash() != k->hash) {
      LOCKSTEP_LOG_ERROR("%s: the keyframe of tick %u does not load into the %.*s module as the state it recorded",
                         path.c_str(), r.frames_from, static_cast<int>(module.name.size()), module.name.data());
      return nullptr;
    }
  }
  return sim;
}

bool write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) LOCKSTEP_LOG_ERROR("cannot write %s", path.c_str());
  return static_cast<bool>(out);
}

int verify(const Module& module, const std::string& path, Tick perturb_at, bool allow_incomplete,
           const std::string& state_out, Tick from) {
  Replay r;
  if (!load(path, &r, allow_incomplete, {from, 0})) return kExitBadInput;
  if (r.frames_from != r.header.start_tick) std::printf("from the keyframe of tick %u\n", r.frames_from);
  auto sim = replay_world(module, path, r);
  if (!sim) return kExitBadInput;
  // (A replay of another module would mismatch at tick 1: the warning above says why.)
#ifdef __EMSCRIPTEN__
  const bool bar = false;  // (emscripten calls its standard streams terminals, whatever Node was given)
#else
  const bool bar = isatty(STDERR_FILENO);
#endif
  const std::size_t n = r.frames.size();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    sim->step(r.frames[i]);
    if (perturb_at != 0 && r.frames[i].tick == perturb_at) sim->perturb(12345);
    const std::uint64_t h = sim->hash();
    if (h != r.hashes[i]) {
      if (bar) std::fputs("\n", stderr);
      std::printf("MISMATCH at tick %u: replay %s, recomputed %s\n", r.frames[i].tick, hash_hex(r.hashes[i]).c_str(),
                  hash_hex(h).c_str());
      // The recording holds hashes, not states: the entity and field need the state of a build
      // that agrees with it. This build's state goes to a file the other build compares with.
      if (!state_out.empty()) {
        std::vector<std::uint8_t> bytes;
        sim->serialize(bytes);
        if (!write_bytes(state_out, bytes)) return 1;
        std::printf("this build's state at tick %u: %s; name the entity and field with a build that verifies:\n"
                    "  lockstep-replay compare %s %s --tick %u\n", r.frames[i].tick, state_out.c_str(), path.c_str(),
                    state_out.c_str(), r.frames[i].tick);
      }
      return kExitMismatch;
    }
    if (bar && (i % 256 == 0 || i + 1 == n)) {
      const int width = 40;
      const auto done = static_cast<int>(static_cast<double>(i + 1) / static_cast<double>(n) * width);
      std::fprintf(stderr, "\r[%.*s%*s] tick %u/%zu", done, "########################################", width - done, "",
                   r.frames[i].tick, n);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fputs("\n", stderr);
  const double tps = secs > 0 ? static_cast<double>(n) / secs : 0.0;
  std::printf("OK %zu ticks verified (%.*s %s, %u players), %.0f ticks/s, %.0fx real time\n", n,
              static_cast<int>(module.name.size()), module.name.data(), module.settings_text(r.header.world.settings).c_str(),
              r.header.world.players, tps, tps / kTickRate);
  return kExitOk;
}

// Steps the replay's world to `tick` from the latest keyframe before it (without checking the
// recorded hashes: this may be the build that parts); nullptr when the replay is bad or shorter.
// A perturbation asks for the world from the start.
std::unique_ptr<Simulation> world_at(const Module& module, const std::string& path, Tick tick, Tick perturb_at,
                                     int* code, Replay& r) {
  *code = kExitBadInput;
  // Frames up to `tick` from the latest keyframe at or before it; none when it is the start.
  if (!load(path, &r, true, {perturb_at != 0 ? 0 : tick, tick, tick != 0 || perturb_at != 0})) return nullptr;
  if (tick < r.header.start_tick || tick > r.last_tick) {
    LOCKSTEP_LOG_ERROR("%s holds ticks %u..%u; tick %u is not one of them", path.c_str(), r.header.start_tick,
                       r.last_tick, tick);
    return nullptr;
  }
  auto sim = replay_world(module, path, r);
  if (!sim) return nullptr;
  for (std::size_t i = 0; i < r.frames.size() && r.frames[i].tick <= tick; ++i) {
    sim->step(r.frames[i]);
    if (perturb_at != 0 && r.frames[i].tick == perturb_at) sim->perturb(12345);
  }
  *code = kExitOk;
  return sim;
}

// `state`: this build's state at a tick, as the module serializes it.
int state(const Module& module, const std::string& path, Tick tick, Tick perturb_at, const std::string& out) {
  int code = 0;
  Replay r;
  const auto sim = world_at(module, path, tick, perturb_at, &code, r);
  if (!sim) return code;
  std::vector<std::uint8_t> bytes;
  sim->serialize(bytes);
  if (!write_bytes(out, bytes)) return 1;
  std::printf("tick %u: %zu bytes, hash %s, written to %s\n", tick, bytes.size(), hash_hex(sim->hash()).c_str(),
              out.c_str());
  return kExitOk;
}

// `seek`: the state at any tick, from the latest keyframe before it; checked against the
// recorded hash of that tick.
int seek(const Module& module, const std::string& path, Tick tick, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  int code = 0;
  Replay r;
  const auto sim = world_at(module, path, tick, 0, &code, r);
  if (!sim) return code;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t h = sim->hash();
  const auto recorded = tick == r.frames_from ? std::optional<std::uint64_t>(sim->hash()) : r.hash_at(tick);
  std::vector<std::uint8_t> bytes;
  sim->serialize(bytes);
  if (!out.empty() && !write_bytes(out, bytes)) return 1;
  const Json j{{"tick", tick}, {"hash", hash_hex(h)}, {"state_bytes", bytes.size()}, {"keyframe", r.frames_from},
               {"ticks_stepped", tick - r.frames_from}, {"ms", ms}, {"state_file", out}};
  std::printf("%s\n", json_text(j).c_str());
  if (recorded && *recorded != h) {
    LOCKSTEP_LOG_ERROR("tick %u: this build's hash %s is not the recorded %s (from the keyframe of tick %u)", tick,
                       hash_hex(h).c_str(), hash_hex(*recorded).c_str(), r.frames_from);
    return kExitMismatch;
  }
  return kExitOk;
}

// A state file (from `state`, `seek -o`, `seek --party`, `verify --state-out`) loaded as a world of
// the replay's; nullptr with the reason logged.
std::unique_ptr<Simulation> load_state(const Module& module, const Replay& r, const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    LOCKSTEP_LOG_ERROR("cannot open %s", file.c_str());
    return nullptr;
  }
  std::vector<std::uint8_t> bytes;
  for (char buf[65536]; in.read(buf, sizeof buf) || in.gcount() > 0;) {
    bytes.insert(bytes.end(), buf, buf + in.gcount());
    if (bytes.size() > kMaxKeyframeBytes) {
      LOCKSTEP_LOG_ERROR("%s is larger than any state (%zu bytes)", file.c_str(), kMaxKeyframeBytes);
      return nullptr;
    }
  }
  auto sim = module.create(r.header.world);
  if (!sim || !sim->deserialize(bytes)) {
    LOCKSTEP_LOG_ERROR("%s is not a state of this replay's world (%zu bytes the %.*s module does not load)", file.c_str(),
                       bytes.size(), static_cast<int>(module.name.size()), module.name.data());
    return nullptr;
  }
  return sim;
}

// `compare FILE A --with B`: two stored states of FILE's world (two parties' out of a bundle, say),
// neither re-simulated: the entity and field where they part.
int compare_states(const Module& module, const std::string& path, const std::string& a_path, const std::string& b_path) {
  Replay r;
  if (!load(path, &r, true, {0, 0, false})) return kExitBadInput;
  const auto a = load_state(module, r, a_path), b = a ? load_state(module, r, b_path) : nullptr;
  if (!a || !b) return kExitBadInput;
  if (a->tick() != b->tick()) {
    LOCKSTEP_LOG_ERROR("%s holds tick %u and %s tick %u: compare states of one tick", a_path.c_str(), a->tick(),
                       b_path.c_str(), b->tick());
    return kExitBadInput;
  }
  const StateDifference d = locate_difference(*a, *b);
  Json out = difference_json(d, "a", "b");
  out["tick"] = a->tick();
  out["a"] = a_path;
  out["b"] = b_path;
  out["a_hash"] = hash_hex(a->hash());
  out["b_hash"] = hash_hex(b->hash());
  std::printf("%s\n", json_text(out).c_str());
  if (d.where == "none") {
    LOCKSTEP_LOG_INFO("tick %u: the states are equal", a->tick());
    return kExitOk;
  }
  LOCKSTEP_LOG_ERROR("tick %u: %s (%s vs %s)", a->tick(), difference_text(d).c_str(), a_path.c_str(), b_path.c_str());
  return kExitMismatch;
}

// `seek BUNDLE TICK --party P`: a party's own state at a tick, as the bundle stores it (not
// re-simulated): what that party's machine held.
int party_state(const std::string& path, Tick tick, const std::string& party, const std::string& out) {
  if (!is_bundle_file(path)) {
    LOCKSTEP_LOG_ERROR("--party reads a desync bundle's stored states; %s is not a bundle", path.c_str());
    return kExitBadInput;
  }
  DesyncBundle b;
  std::string detail;
  if (read_bundle(path, &b, &detail) != ReplayError::None) {
    LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
    return kExitBadInput;
  }
  const BundleParty* p = nullptr;
  std::string names;
  for (std::size_t i = 0; i < b.parties.size(); ++i) {
    if (b.parties[i].name == party || std::to_string(i) == party) p = &b.parties[i];
    names += (names.empty() ? "" : ", ") + std::to_string(i) + " '" + b.parties[i].name + "'";
  }
  if (!p) {
    LOCKSTEP_LOG_ERROR("%s has no party '%s'; its parties: %s", path.c_str(), party.c_str(), names.c_str());
    return kExitBadInput;
  }
  const BundleState* st = p->state(tick);
  if (!st) {
    std::string held;
    for (const BundleState& s : p->states) held += (held.empty() ? "" : ", ") + std::to_string(s.tick);
    LOCKSTEP_LOG_ERROR("%s holds no state of '%s' at tick %u; it holds ticks %s", path.c_str(), p->name.c_str(), tick,
                       held.empty() ? "none" : held.c_str());
    return kExitBadInput;
  }
  if (!out.empty() && !write_bytes(out, st->bytes)) return 1;
  const Json j{{"tick", tick}, {"party", p->name}, {"hash", hash_hex(st->hash)}, {"state_bytes", st->bytes.size()},
               {"stored", true}, {"state_file", out}};
  std::printf("%s\n", json_text(j).c_str());
  return kExitOk;
}

// `compare`: this build's state at a tick against another build's (a file `state` or `verify
// --state-out` wrote, perhaps on another machine): the entity and field where they part.
int compare(const Module& module, const std::string& path, Tick tick, const std::string& other_path, Tick perturb_at) {
  int code = 0;
  Replay r;
  const auto sim = world_at(module, path, tick, perturb_at, &code, r);
  if (!sim) return code;
  const auto theirs = load_state(module, r, other_path);
  if (!theirs) return kExitBadInput;
  if (theirs->tick() != sim->tick()) {
    LOCKSTEP_LOG_ERROR("%s holds tick %u, not tick %u", other_path.c_str(), theirs->tick(), sim->tick());
    return kExitBadInput;
  }
  const StateDifference d = locate_difference(*sim, *theirs);
  Json out = difference_json(d, "this_build", "other");
  out["tick"] = tick;
  out["this_build_hash"] = hash_hex(sim->hash());
  out["other_hash"] = hash_hex(theirs->hash());
  std::printf("%s\n", json_text(out).c_str());
  if (d.where == "none") {
    LOCKSTEP_LOG_INFO("tick %u: the states are equal", tick);
    return kExitOk;
  }
  LOCKSTEP_LOG_ERROR("tick %u: %s (this build vs %s)", tick, difference_text(d).c_str(), other_path.c_str());
  return kExitMismatch;
}

int info(const Module& module, const std::string& path) {
  Replay r;
  std::string detail;
  // A desync bundle: its replay, and its parties with the ticks of the states each stored.
  Json parties = nullptr;
  if (is_bundle_file(path)) {
    DesyncBundle b;
    if (read_bundle(path, &b, &detail) != ReplayError::None) {
      LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
      return kExitBadInput;
    }
    parties = Json::array();
    for (std::size_t i = 0; i < b.parties.size(); ++i) {
      Json ticks = Json::array();
      for (const BundleState& st : b.parties[i].states) ticks.push_back(st.tick);
      parties.push_back(Json{{"index", i}, {"name", b.parties[i].name}, {"state_ticks", ticks}});
    }
    r = std::move(b.replay);
  } else if (const ReplayError e = read_replay(path, &r, &detail);
             e != ReplayError::None && !(e == ReplayError::Truncated && !r.frames.empty())) {
    LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
    return kExitBadInput;
  }
  std::size_t filled = 0, commands = 0;
  for (const auto& f : r.frames) {
    filled += static_cast<std::size_t>(__builtin_popcount(f.filled));
    commands += f.commands.size();
  }
  Json libraries = Json::array();
  for (const LibraryBuild& l : r.header.libraries) libraries.push_back(Json{{"name", l.name}, {"build", l.build}});
  Json out{{"protocol_version", r.header.protocol_version},
                 {"fingerprint", hash_hex(r.header.fingerprint)},
                 {"sim", r.header.module.empty() ? std::string(module.name) : r.header.module},
                 {"input_size", r.header.input_size},
                 // Settings are the module's to read: null when the replay's module is not the one
                 // loaded (--sim-lib names it); their bytes are always given.
                 {"settings", r.header.module.empty() || r.header.module == module.name
                                  ? Json(module.settings_text(r.header.world.settings))
                                  : Json(nullptr)},
                 {"settings_hex", bytes_hex(r.header.world.settings)},
                 {"settings_bytes", r.header.world.settings.size()},
                 {"libraries", libraries},
                 {"players", r.header.world.players},
                 {"input_delay", r.header.input_delay},
                 {"start_tick", r.header.start_tick},
                 {"format_version", r.header.format_version},
                 {"keyframe_interval", r.header.keyframe_interval},
                 {"keyframes", r.keyframe_ticks.size()},
                 {"ticks", r.frames.size()},
                 {"seconds", static_cast<double>(r.frames.size()) / kTickRate},
                 {"complete", r.complete},
                 {"final_hash", r.hashes.empty() ? "" : hash_hex(r.hashes.back())},
                 {"filled_inputs", filled},
                 {"commands", commands},
                 {"names", r.header.names}};
  if (!parties.is_null()) out["parties"] = parties;
  std::printf("%s\n", json_text(out).c_str());
  if (!r.complete) LOCKSTEP_LOG_WARN("%s", detail.c_str());
  return kExitOk;
}

int trace(const std::string& path, Tick from, Tick to) {
  Replay r;
  if (!load(path, &r, true, {from, to})) return kExitBadInput;
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const Tick t = r.frames[i].tick;
    if (t < from || (to != 0 && t > to)) continue;
    std::printf("%s\n", format_hash_line(t, r.hashes[i]).c_str());
  }
  return kExitOk;
}

int diff(const std::string& a, const std::string& b) {
  std::map<Tick, std::uint64_t> ta, tb;
  if (!load_trace(a, &ta) || !load_trace(b, &tb)) return kExitBadInput;
  auto ia = ta.begin();
  auto ib = tb.begin();
  while (ia != ta.end() && ib != tb.end()) {
    if (ia->first != ib->first) {
      const Tick t = std::min(ia->first, ib->first);
      std::printf("first difference at tick %u: only %s has it\n", t, ia->first < ib->first ? a.c_str() : b.c_str());
      return kExitMismatch;
    }
    if (ia->second != ib->second) {
      std::printf("first difference at tick %u: %s %s, %s %s\n", ia->first, a.c_str(), hash_hex(ia->second).c_str(),
                  b.c_str(), hash_hex(ib->second).c_str());
      return kExitMismatch;
    }
    ++ia;
    ++ib;
  }
  if (ia != ta.end() || ib != tb.end()) {
    const bool a_longer = ia != ta.end();
    std::printf("first difference at tick %u: only %s has it\n", a_longer ? ia->first : ib->first,
                a_longer ? a.c_str() : b.c_str());
    return kExitMismatch;
  }
  std::printf("identical: %zu ticks\n", ta.size());
  return kExitOk;
}

// `view`: the page of a bundle or a replay (desync_page.hpp).
int view(const Module& module, const std::string& path, const std::string& out, const std::string& session_file) {
  std::string page, detail;
  // The file as the page's commands name it: from the page's folder, where a reader runs them.
  std::string name = std::filesystem::path(path).filename().string();
  {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path from = fs::weakly_canonical(fs::absolute(out, ec).parent_path(), ec);
    const fs::path rel = ec ? fs::path() : fs::weakly_canonical(fs::absolute(path, ec), ec).lexically_relative(from);
    if (!ec && !rel.empty()) name = rel.string();
  }
  if (is_bundle_file(path)) {
    DesyncBundle b;
    if (read_bundle(path, &b, &detail) != ReplayError::None) {
      LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
      return kExitBadInput;
    }
    Replay session;
    if (!session_file.empty() && !load(session_file, &session, true)) return kExitBadInput;
    try {
      page = bundle_page(module, b, name, session_file.empty() ? nullptr : &session);
    } catch (const std::exception& e) {  // (the page's reads are checked; this is the last guard)
      LOCKSTEP_LOG_ERROR("%s: cannot make a page of it: %s", path.c_str(), e.what());
      return kExitBadInput;
    }
  } else {
    Replay r;
    if (!load(path, &r, true)) return kExitBadInput;
    page = replay_page(module, r, name);
  }
  std::ofstream f(out, std::ios::binary);
  f << page;
  f.flush();
  if (!f) {
    LOCKSTEP_LOG_ERROR("cannot write %s", out.c_str());
    return 1;
  }
  std::printf("%s: %zu bytes\n", out.c_str(), page.size());
  return kExitOk;
}

// `bisect`: where two builds of a module part on a replay (bisect.hpp). Each build is named by
// where it came from (its library file, or built in) and its build id.
struct BuildName {
  const Module* module;
  std::string file;  // the library, or "" for a built-in module
  [[nodiscard]] Json json() const {
    return Json{{"module", std::string(module->name)}, {"file", file.empty() ? "built in" : file},
                {"build_id", hash_hex(module->build_id)}};
  }
  [[nodiscard]] std::string text() const {
    return (file.empty() ? "built-in " + std::string(module->name) : file) + ", build " + hash_hex(module->build_id);
  }
};
int bisect(const BuildName& a, const BuildName& b, const std::string& path, bool gallop) {
  Replay r;
  if (!load(path, &r)) return kExitBadInput;
  if (!replay_world(*a.module, path, r)) return kExitBadInput;
  if (a.module->build_id == b.module->build_id && a.module->name == b.module->name &&
      std::equal(a.module->libraries.begin(), a.module->libraries.end(), b.module->libraries.begin(), b.module->libraries.end()))
    LOCKSTEP_LOG_WARN("the two builds have the same build id and libraries: they are one build. (Two builds of a "
                      "shared library of one soname cannot both be loaded in one process: the first serves both.)");
  const BisectResult res = bisect_replay(a.module->create, b.module->create, r, !gallop);
  if (!res.ok) {
    LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), res.error.c_str());
    return kExitBadInput;
  }
  Json out{{"mode", gallop ? "gallop" : "every stretch"}, {"a", a.json()}, {"b", b.json()}, {"parted", res.parted},
           {"exhaustive", res.exhaustive}, {"keyframes", r.keyframes.size()}, {"stretches", res.stretches},
           {"stretches_tested", res.stretches_tested}, {"ticks_simulated", res.ticks_simulated},
           {"linear_ticks", res.linear_ticks}};
  if (!res.parted && res.unsteady.empty()) {
    std::printf("%s\n", json_text(out).c_str());
    LOCKSTEP_LOG_INFO("a (%s) and b (%s) agree on every tick of the replay (%zu stretches between keyframes)",
                      a.text().c_str(), b.text().c_str(), res.stretches);
    return kExitOk;
  }
  out["tick"] = res.tick;
  out["a_hash"] = hash_hex(res.a_hash);
  out["b_hash"] = hash_hex(res.b_hash);
  const auto rec = r.hash_at(res.tick);
  if (rec) {
    out["recorded_hash"] = hash_hex(*rec);
    out["agrees_with_recording"] = *rec == res.a_hash ? "a" : *rec == res.b_hash ? "b" : "neither";
  }
  if (!res.unsteady.empty()) {
    // Not a parting of the builds: stepped again, the stretch gave another result.
    out["unsteady"] = res.unsteady;
    std::printf("%s\n", json_text(out).c_str());
    const std::string who = res.unsteady == "both" ? "both builds" : res.unsteady == "a" ? "a (" + a.text() + ")" : "b (" + b.text() + ")";
    LOCKSTEP_LOG_ERROR("%s gave another result when tick %u was stepped again from the same keyframe: a build that "
                       "differs from itself (uninitialised memory, an address or a clock in the state), not a "
                       "difference between the builds%s", who.c_str(), res.tick,
                       rec && res.a_hash == *rec && res.b_hash == *rec ? "; both hashes now equal the recorded one" : "");
    return kExitMismatch;
  }
  out["difference"] = difference_json(res.difference, "a", "b");
  std::printf("%s\n", json_text(out).c_str());
  LOCKSTEP_LOG_ERROR("a (%s) and b (%s) part at tick %u: %s (%llu ticks simulated; every stretch in order: %llu)%s",
                     a.text().c_str(), b.text().c_str(), res.tick, difference_text(res.difference).c_str(),
                     static_cast<unsigned long long>(res.ticks_simulated), static_cast<unsigned long long>(res.linear_ticks),
                     res.exhaustive ? "" : "; --gallop skipped stretches before it, so an earlier parting that did not last "
                                           "would be missed");
  return kExitMismatch;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-replay");
  CLI::App app{"lockstep-replay: checks and reads lockstep replay files.\n"
               "Exit codes: 0 ok, 1 runtime failure, 2 bad usage or a corrupt/truncated/foreign file, 3 mismatch."};
  app.set_version_flag("--version", std::string("lockstep-replay ") + kVersion + " (replay format " +
                                        std::to_string(kReplayFormatVersion) + ")");
  app.require_subcommand(1);
  app.fallthrough();  // --sim and --sim-lib may come after the subcommand too
  std::string sim, sim_lib;
  app.add_option("--sim-lib", sim_lib, "load the simulation module from this shared library");
  app.add_option("--sim", sim, "the simulation module to replay with ('list' lists them); default: the one the "
                               "replay names, for record-scenario " + std::string(default_module().name));
  app.add_flag("--any-build", g_any_build, "verify, state, compare: replay even when a library the module links is "
                                         "another build than the recording's (refused otherwise)");
  std::string file, other;
  Tick from = 0, to = 0, perturb_at = 0, ticks = 3000;
  bool allow_incomplete = false;
  auto* v = app.add_subcommand("verify", "re-simulate from the header and compare every tick's hash");
  v->add_option("FILE", file, "replay file")->required();
  v->add_option("--perturb-at", perturb_at, "test hook: perturb the recomputed state by one ULP after this tick")->check(lockstep::cli::unsigned_number());
  v->add_flag("--allow-incomplete", allow_incomplete, "verify the complete part of a replay cut short by a crash");
  v->add_option("--from", from, "start from the latest keyframe at or before this tick")->check(lockstep::cli::unsigned_number());
  std::string state_out, other_state;
  v->add_option("--state-out", state_out, "on a mismatch, write this build's state at that tick here, for `compare` "
                                          "with a build that verifies");
  Tick at = 0;
  auto* st = app.add_subcommand("state", "write this build's state at a tick (the module's serialization)");
  st->add_option("FILE", file, "replay file")->required();
  st->add_option("--tick", at, "the tick")->required()->check(lockstep::cli::unsigned_number());
  st->add_option("-o,--output", state_out, "where the state goes")->required();
  st->add_option("--perturb-at", perturb_at, "test hook: perturb the state by one ULP after this tick")->check(lockstep::cli::unsigned_number());
  auto* cmp = app.add_subcommand("compare", "this build's state at a tick against another build's (a file from "
                                            "`state` or `verify --state-out`): names the entity and field that differ");
  cmp->add_option("FILE", file, "replay file")->required();
  cmp->add_option("STATE", other_state, "the other build's state at the tick")->required();
  cmp->add_option("--tick", at, "the tick (not with --with)")->check(lockstep::cli::unsigned_number());
  std::string with_state;
  cmp->add_option("--with", with_state, "compare STATE with this state file instead of this build's state (two "
                                         "stored states, e.g. two parties' from `seek BUNDLE TICK --party P -o FILE`)");
  cmp->add_option("--perturb-at", perturb_at, "test hook: perturb this build's state by one ULP after this tick")->check(lockstep::cli::unsigned_number());
  auto* sk = app.add_subcommand("seek", "this build's state at any tick, from the latest keyframe before it, checked "
                                       "against the recorded hash; prints JSON");
  sk->add_option("FILE", file, "replay file")->required();
  sk->add_option("TICK", at, "the tick")->required()->check(lockstep::cli::unsigned_number());
  sk->add_option("-o,--output", state_out, "also write the state (the module's serialization) here");
  std::string party;
  sk->add_option("--party", party, "a desync bundle: the state this party (its name, or its index) stored at TICK, "
                                   "not re-simulated");
  auto* i = app.add_subcommand("info", "print the header and totals as JSON");
  i->add_option("FILE", file, "replay file")->required();
  auto* t = app.add_subcommand("trace", "print the recorded hashes in the --hash-log format");
  t->add_option("FILE", file, "replay file")->required();
  t->add_option("--from", from, "first tick")->check(lockstep::cli::unsigned_number());
  t->add_option("--to", to, "last tick (0: to the end)")->check(lockstep::cli::unsigned_number());
  auto* d = app.add_subcommand("diff", "first tick where two replays or hash logs differ");
  d->add_option("A", file, "replay or hash log")->required();
  d->add_option("B", other, "replay or hash log")->required();
  std::string page_out;
  auto* vw = app.add_subcommand("view", "write a self-contained HTML page of a desync bundle or a replay");
  vw->add_option("FILE", file, "desync bundle or replay file")->required();
  vw->add_option("-o,--output", page_out, "the page")->required();
  std::string session_file;
  vw->add_option("--session", session_file, "the session's replay (the server's --record): the timeline's reference covers "
                                            "the whole session, not only the bundle's window");
  std::string against, against_lib;
  bool linear = false, gallop = false;
  auto* bs = app.add_subcommand("bisect", "the first tick at which two builds of a module part on a replay, every "
                                          "stretch between its keyframes tested, with the entity and field; prints JSON");
  bs->add_option("FILE", file, "replay file (with keyframes)")->required();
  bs->add_option("--against", against, "the other build: a built-in module");
  bs->add_option("--against-lib", against_lib, "the other build: a module's shared library");
  bs->add_flag("--gallop", gallop, "assume a parting lasts once it begins (FMA, another libm): gallop and halve "
                                   "over the stretches, faster for a late parting, blind to one that does not last");
  bs->add_flag("--linear", linear, "every stretch in order (the default; kept for scripts that say it)");
  auto* rs = app.add_subcommand("record-scenario", "write the module's golden scenario (its bots) as a replay");
  rs->add_option("FILE", file, "output file")->required();
  std::uint32_t keyframe_seconds = kDefaultKeyframeInterval / kTickRate;
  rs->add_option("--keyframe-every", keyframe_seconds, "seconds between keyframes (0: none)")->capture_default_str()->check(CLI::Range(0u, 3600u));
  rs->add_option("--ticks", ticks, "ticks to record")->check(lockstep::cli::unsigned_number())->check(CLI::Range(1u, 1'000'000u))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }
  // A party's stored state needs no module: the bundle holds it.
  if (sk->parsed() && !party.empty()) return party_state(file, at, party, state_out);
#ifdef LOCKSTEP_LINKED_MODULE
  if (!sim_lib.empty() || !sim.empty() || bs->parsed()) {
    LOCKSTEP_LOG_ERROR("this lockstep-replay replays the module linked into it: it takes no --sim, --sim-lib or bisect");
    return kExitBadInput;
  }
  std::string linked_error;
  const Module* linked = linked_module(&linked_error);
  if (!linked) {
    LOCKSTEP_LOG_ERROR("%s", linked_error.c_str());
    return kExitBadInput;
  }
#else
  // Without --sim, a replay is read with the built-in module it names.
  if (sim.empty() && sim_lib.empty() && (v->parsed() || i->parsed() || st->parsed() || cmp->parsed() || sk->parsed() || vw->parsed() ||
                                            bs->parsed())) {
    Replay r;
    std::string detail;
    if (is_bundle_file(file)) {
      DesyncBundle b;
      read_bundle(file, &b, &detail);
      r = std::move(b.replay);
    } else {
      read_replay_header(file, &r.header, &detail);  // the header alone
    }
    if (!r.header.module.empty() && find_module(r.header.module)) sim = r.header.module;
    else if (!r.header.module.empty() && !i->parsed() && !vw->parsed()) {
      LOCKSTEP_LOG_ERROR("%s was recorded with module '%s', which is not built in: load it with --sim-lib FILE",
                         file.c_str(), r.header.module.c_str());
      return kExitBadInput;
    }
  }
#endif
  if (sim.empty()) sim = std::string(default_module().name);
  int code = 0;
#ifdef LOCKSTEP_LINKED_MODULE
  const Module* module = linked;
#else
  const Module* module = module_from_options(sim, sim_lib, &code);
  if (!module) return code;
#endif
  if (v->parsed()) return verify(*module, file, perturb_at, allow_incomplete, state_out, from);
  if (sk->parsed()) return seek(*module, file, at, state_out);
  if (vw->parsed()) return view(*module, file, page_out, session_file);
  if (bs->parsed()) {
    if (against.empty() == against_lib.empty()) {
      LOCKSTEP_LOG_ERROR("bisect: name the other build with --against NAME or --against-lib FILE");
      return kExitBadInput;
    }
    const Module* against_module = module_from_options(against, against_lib, &code);
    if (!against_module) return code;
    if (linear && gallop) {
      LOCKSTEP_LOG_ERROR("bisect: --linear and --gallop are two searches: give one");
      return kExitBadInput;
    }
    return bisect({module, sim_lib}, {against_module, against_lib}, file, gallop);
  }
  if (st->parsed()) return state(*module, file, at, perturb_at, state_out);
  if (cmp->parsed()) {
    if (!with_state.empty()) return compare_states(*module, file, other_state, with_state);
    if (cmp->count("--tick") == 0) {
      LOCKSTEP_LOG_ERROR("compare: give --tick (this build's state there against STATE) or --with (two state files)");
      return kExitBadInput;
    }
    return compare(*module, file, at, other_state, perturb_at);
  }
  if (i->parsed()) return info(*module, file);
  if (t->parsed()) return trace(file, from, to);
  if (d->parsed()) return diff(file, other);
  if (rs->parsed()) {
    std::string error;
    if (!write_replay(file, scenario_replay(golden_scenario(*module), ticks, keyframe_seconds * kTickRate), &error)) {
      LOCKSTEP_LOG_ERROR("%s", error.c_str());
      return 1;
    }
    return kExitOk;
  }
  return kExitBadInput;
}
