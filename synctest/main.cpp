// lockstep-synctest: the desync checks on any simulation module (built in or --sim-lib), for a
// team's CI. Parses options, runs the checks of synctest.hpp (two of them against runs of itself
// in separate processes), prints a JSON report and optionally a JUnit file. Exit 0 when every
// check holds, 3 when one fails, 2 for bad usage, 1 when a child run fails.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/cli.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_page.hpp"
#include "lockstep/log.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/synctest.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

constexpr std::uint32_t kMaxHeapShift = 8;  // rounds of --heap-shift

struct Options {
  std::string sim = std::string(default_module().name), sim_lib, world, junit, report, bundle_dir;
  std::uint32_t players = 0;  // 0: 1, 2 and the most the module builds (up to 8)
  SyncTestConfig cfg;
  bool emit_trace = false;  // a child run: print the trace and exit
  std::uint32_t heap_shift = 0;  // a child run: hold heap blocks first (rounds), so every later address moves
  bool describe = false;    // print the game's description for lockstep-server --relay and exit
  std::int64_t emit_state = -1;  // a child run: print the state after this tick (hex; 0: the new world) and exit
  std::string changed_world;  // with emit_trace: print only the fingerprint of this world
};

void declare(CLI::App& app, Options& o) {
  using lockstep::cli::unsigned_number;
  app.add_option("--sim", o.sim, "the simulation module (built in by name; 'list' lists them)")->capture_default_str();
  app.add_option("--sim-lib", o.sim_lib, "load the simulation module from this shared library (docs/MODULES.md)");
  app.add_option("--world", o.world, "the module's world settings, key=value,... or @FILE (default: the module's "
                 "default and golden worlds)");
  app.add_option("--players", o.players, "player slots (default: 1, 2 and the most the module builds, up to 8)")
      ->check(unsigned_number())->check(CLI::Range(1, kMaxPlayers));
  app.add_option("--ticks", o.cfg.ticks, "ticks of each run")->check(unsigned_number())->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  app.add_option("--seed", o.cfg.seed, "seed of the input and command streams")->check(unsigned_number())->capture_default_str();
  app.add_option("--rollback", o.cfg.rollback, "k: ticks stepped between a save and its load")->check(unsigned_number())
      ->check(CLI::Range(1u, 64u))->capture_default_str();
  app.add_option("--history", o.cfg.history, "ticks stepped after each load of the history check (a world from tick 0 "
                 "against one loaded from its bytes)")->check(unsigned_number())->check(CLI::Range(1u, 10'000u))
      ->capture_default_str();
  app.add_option("--sample", o.cfg.sample, "entities' worth of one-bit perturbations the desync probe must name")
      ->check(unsigned_number())->check(CLI::Range(1u, 1000u))->capture_default_str();
  app.add_option("--junit", o.junit, "also write the checks as a JUnit XML file (for CI systems)");
  app.add_option("--report", o.report, "write the JSON report to this file instead of stdout");
  app.add_option("--bundle-dir", o.bundle_dir, "when a cross-process check fails, write its desync bundle and the "
                                               "bundle's HTML page here (named in the reports)");
  app.add_option("--emit-state", o.emit_state, "internal: print the state after this tick")->check(CLI::Range(0, 1'000'000))
      ->group("");
  app.add_flag("--emit-trace", o.emit_trace, "internal: print this run's trace (the cross-process checks run it)")->group("");
  app.add_option("--heap-shift", o.heap_shift, "internal: hold this many rounds of heap blocks before the run, moving "
                 "every later heap address")->check(CLI::Range(0u, kMaxHeapShift))->group("");
  app.add_flag("--describe", o.describe,
               "print the module's description for a server without the simulation (lockstep-server --relay FILE): "
               "its fingerprints, input size and --world's settings bytes; run no checks");
  app.add_option("--fingerprint-of", o.changed_world, "internal: print the fingerprint of this world")->group("");
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The blocks a child run holds to move every later heap address (--heap-shift): one of every size
// from 8 to 4096 bytes per round, so each of the allocator's size classes (glibc's bins, ASan's
// regions) starts further on. Kept in a plain array, which no destructor empties before a leak
// checker looks at exit, so they stay reachable.
void* g_heap_shift[kMaxHeapShift * 512] = {};

// Runs this executable again with `args` (after the shell assignments in `env`) and returns what
// it printed, or false.
bool run_child(const std::string& env, const std::vector<std::string>& args, std::string* out) {
  std::array<char, 4096> self{};
  const ssize_t len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) return false;
  std::string cmd = env + quote(std::string(self.data(), static_cast<std::size_t>(len)));
  for (const auto& a : args) cmd += " " + quote(a);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return false;
  out->clear();
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
  return ::pclose(p) == 0;
}

// The same world with its first numeric setting one higher ("" when there is none).
std::string changed_setting(const Module& m, const WorldParams& world) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string error;
  if (!split_settings(m.settings_text(world.settings), &pairs, &error)) return "";
  for (const auto& [key, value] : pairs) {
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 18) continue;
    const unsigned long long v = std::stoull(value);
    for (const unsigned long long w : {v + 1, v - 1}) {
      WorldParams changed = world;
      if (v == 0 && w == v - 1) continue;
      if (m.parse_world(key + "=" + std::to_string(w), &changed, &error) && m.create(changed)) return key + "=" + std::to_string(w);
    }
  }
  return "";
}

std::string xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

// The libraries the fingerprint covers ("build": a GNU build id) or leaves out ("opted out").
Json libraries_json(std::span<const LibraryBuild> libraries) {
  Json out = Json::array();
  for (const LibraryBuild& l : libraries) out.push_back(Json{{"name", l.name}, {"build", l.build}});
  return out;
}

// An attachment's path as the CI that reads the report finds it: relative to $LOCKSTEP_ATTACHMENT_ROOT
// when set (any CI that resolves attachments from a folder of its own); else GitLab's way, relative
// to $CI_PROJECT_DIR (GitLab shows nothing for an absolute one, gitlab#330955); elsewhere
// (Jenkins' attachments plugin, a developer's machine) the absolute path.
std::string attachment_path(const std::string& page) {
  const char* root = std::getenv("LOCKSTEP_ATTACHMENT_ROOT");
  if (!root || !*root) root = std::getenv("CI_PROJECT_DIR");
  if (!root || !*root) return page;
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::weakly_canonical(root, ec);
  const std::filesystem::path file = std::filesystem::weakly_canonical(page, ec);
  if (ec) return page;
  const std::filesystem::path rel = file.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return page;  // outside the project: GitLab cannot serve it
  return rel.generic_string();
}

bool write_junit(const std::string& path, const std::string& module, const std::vector<CheckResult>& results,
                 std::span<const LibraryBuild> libraries) {
  std::size_t failures = 0;
  for (const auto& r : results) failures += r.ok ? 0 : 1;
  std::ofstream out(path);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"lockstep-synctest\" tests=\"" << results.size()
      << "\" failures=\"" << failures << "\">\n";
  // The libraries the module's fingerprint covers, and those it opts out of, for the record.
  if (!libraries.empty()) {
    out << "  <properties>\n";
    for (const LibraryBuild& l : libraries)
      out << "    <property name=\"library " << xml(l.name) << "\" value=\"" << xml(l.build) << "\"/>\n";
    out << "  </properties>\n";
  }
  for (const auto& r : results) {
    out << "  <testcase classname=\"lockstep-synctest." << xml(module) << "\" name=\"" << xml(r.check) << "\">";
    if (!r.ok) {
      std::string where = r.tick ? " at tick " + std::to_string(r.tick) : "";
      if (r.entity >= 0) where += ", entity " + std::to_string(r.entity);
      if (!r.field.empty()) where += ", field " + r.field;
      std::string text = r.detail;
      if (!r.page.empty()) text += "\nthe desync's page: " + r.page + "\nits bundle: " + r.bundle;
      out << "<failure message=\"" << xml(r.check + where) << "\">" << xml(text) << "</failure>";
      // The attachment convention of Jenkins and GitLab: the page is linked from the test's result.
      if (!r.page.empty()) out << "<system-out>[[ATTACHMENT|" << xml(attachment_path(r.page)) << "]]</system-out>";
    }
    out << "</testcase>\n";
  }
  out << "</testsuite>\n";
  out.flush();
  if (out) return true;
  LOCKSTEP_LOG_ERROR("cannot write --junit %s", path.c_str());
  return false;
}

// The cross-process runs of one variant: this executable again with the variant's options.
struct Child {
  std::vector<std::string> args;  // module, world, players, ticks, seed
  std::string env;                // a shell prefix of environment assignments ("" for none)
};

// Heap memory filled with `byte` when allocated and when freed (glibc's malloc perturbation with
// its per-thread cache off, so every allocation is filled; ASan's fill when the build has it), so
// two children with other bytes disagree wherever the state holds memory it never wrote.
std::string perturbed_env(int byte) {
  const std::string b = std::to_string(byte);
  return "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.perturb=" + b +
         " ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}malloc_fill_byte=" + b + ":max_malloc_fill_size=268435456\" ";
}

bool child_trace(const Child& c, Trace* t) {
  std::vector<std::string> a = c.args;
  a.push_back("--emit-trace");
  std::string out;
  if (run_child(c.env, a, &out) && parse_trace(out, t)) return true;
  LOCKSTEP_LOG_ERROR("a child run of the module failed (it printed %zu bytes)", out.size());
  return false;
}

bool child_state(const Child& c, Tick t, std::vector<std::uint8_t>* state) {
  std::vector<std::string> a = c.args;
  a.insert(a.end(), {"--emit-state", std::to_string(t)});
  std::string out;
  return run_child(c.env, a, &out) && parse_bytes_hex(out, state);
}

// A failed check's bundle, its parties given: the replay from the first party's first state to
// the tick (its hashes `hashes`, by tick from 1), then the file and its page under --bundle-dir,
// named in the check's result.
void finish_bundle(const Options& o, const SyncTestConfig& cfg, DesyncBundle& b, const std::vector<std::uint64_t>& hashes,
                   CheckResult* r) {
  const Module& m = *cfg.module;
  const Tick t = r->tick, from = t > kBundleTicksBefore ? t - kBundleTicksBefore : 0;
  b.written_by = "synctest";
  b.tick = t;
  Replay& rp = b.replay;
  auto world = m.create(cfg.world);
  rp.header.protocol_version = kProtocolVersion;
  rp.header.fingerprint = world ? world->fingerprint() : 0;
  rp.header.world = cfg.world;
  rp.header.input_size = m.input_size;
  rp.header.module = std::string(m.name);
  rp.header.libraries.assign(m.libraries.begin(), m.libraries.end());
  for (std::uint32_t p = 0; p < cfg.world.players; ++p) rp.header.names.push_back("bot" + std::to_string(p));
  const BundleState* start = b.parties.empty() ? nullptr : b.parties[0].state(from);
  if (from != 0 && !start) {
    rp.header.start_tick = t;  // no start state: no frames
    rp.frames_from = t;
  } else {
    rp.header.start_tick = from;
    rp.frames_from = from;
    if (from != 0) rp.keyframes.push_back({from, start->hash, start->bytes});
    for (Tick s = from + 1; s <= t && s <= hashes.size(); ++s) {
      rp.frames.push_back(synctest_frame(cfg, s));
      rp.hashes.push_back(hashes[s - 1]);
    }
  }
  rp.end_reason = "synctest " + r->check + " failed";
  std::string safe = r->check + "-" + cfg.variant;
  for (char& c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  const std::string path = o.bundle_dir + "/synctest-" + std::string(m.name) + "-" + safe + ".bundle";
  std::string error;
  if (!write_bundle(path, b, &error)) {
    LOCKSTEP_LOG_ERROR("--bundle-dir: %s", error.c_str());
    return;
  }
  r->bundle = path;
  // The page, read back from the file as a reader would.
  DesyncBundle back;
  if (read_bundle(path, &back, &error) != ReplayError::None) {
    LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), error.c_str());
    return;
  }
  const std::string page_path = path.substr(0, path.size() - 7) + ".html";
  std::ofstream page(page_path, std::ios::binary);
  page << bundle_page(m, back, path.substr(path.rfind('/') + 1));
  page.flush();
  if (page) r->page = page_path;
  LOCKSTEP_LOG_ERROR("%s failed: desync bundle %s, page %s", r->check.c_str(), path.c_str(), page_path.c_str());
}

Json bundle_report(const SyncTestConfig& cfg, const CheckResult& r, const std::string& other) {
  Json j = result_json(r);
  j["variant"] = cfg.variant;
  j["where"] = r.entity >= 0 ? "entity" : r.field.empty() ? "unknown" : "global";
  j["name"] = other;
  return j;
}

// The desync bundle of a failed cross-process check and its page: both children's states at its
// tick and the few before it, their hashes, and the stream from the first of those states.
void write_check_bundle(const Options& o, const SyncTestConfig& cfg, const Child& x, const Child& y, const Trace& tx,
                        const Trace& ty, CheckResult* r) {
  const Tick t = r->tick, from = t > kBundleTicksBefore ? t - kBundleTicksBefore : 0;
  DesyncBundle b;
  b.report = bundle_report(cfg, *r, "run 2");
  const char* names[2] = {r->check == "memory" ? "run 1 (heap 0x5a)" : "run 1", r->check == "memory" ? "run 2 (heap 0xa5, shifted)" : "run 2"};
  const Child* children[2] = {&x, &y};
  const Trace* traces[2] = {&tx, &ty};
  for (int k = 0; k < 2; ++k) {
    BundleParty p;
    p.name = names[k];
    for (std::size_t i = 0; i < traces[k]->hashes.size(); ++i) p.hashes.emplace_back(static_cast<Tick>(i + 1), traces[k]->hashes[i]);
    for (Tick s = from; s <= t; ++s) {
      BundleState st{s, 0, {}};
      if (!child_state(*children[k], s, &st.bytes)) continue;
      st.hash = hash_bytes(st.bytes);
      p.states.push_back(std::move(st));
    }
    b.parties.push_back(std::move(p));
  }
  finish_bundle(o, cfg, b, tx.hashes, r);
}

// The bundle of a failed check within one process (rollback, history, the copies): the world
// stepped from tick 0 at the tick and the few before it, beside the check's own account of the
// other side (its detail, entity and field).
void write_local_bundle(const Options& o, const SyncTestConfig& cfg, CheckResult* r) {
  const Tick t = r->tick, from = t > kBundleTicksBefore ? t - kBundleTicksBefore : 0;
  Trace trace;
  std::string error;
  if (!run_trace(cfg, &trace, &error)) return;
  DesyncBundle b;
  b.report = bundle_report(cfg, *r, "the " + r->check + " check's world");
  BundleParty p;
  p.name = "stepped from tick 0";
  for (Tick s = 1; s <= t && s <= trace.hashes.size(); ++s) p.hashes.emplace_back(s, trace.hashes[s - 1]);
  for (Tick s = from; s <= t; ++s) {
    BundleState st{s, 0, {}};
    if (!run_state(cfg, s, &st.bytes, &error)) continue;
    st.hash = hash_bytes(st.bytes);
    p.states.push_back(std::move(st));
  }
  // The check's own two sides first (rollback's passes, history's worlds): the page holds the
  // second against the first, red on the timeline where they part, their states side by side.
  for (CheckResult::Side& side : r->sides) {
    BundleParty q;
    q.name = side.name;
    q.hashes = side.hashes;
    if (!side.state.empty()) q.states.push_back({t, hash_bytes(side.state), std::move(side.state)});
    b.parties.push_back(std::move(q));
  }
  b.parties.push_back(std::move(p));
  finish_bundle(o, cfg, b, trace.hashes, r);
}

// A failed cross-process check, localized: both children's states of its tick (0: the new
// worlds), compared; with --bundle-dir, its bundle and page written.
void localize_children(const Options& o, const SyncTestConfig& cfg, const Child& x, const Child& y, const Trace& tx,
                       const Trace& ty, CheckResult* r) {
  std::vector<std::uint8_t> a, b;
  if (!child_state(x, r->tick, &a) || !child_state(y, r->tick, &b)) {
    r->detail += "; the children's states could not be read back";
    return;
  }
  localize_states(cfg, a, b, r);
  if (!o.bundle_dir.empty()) write_check_bundle(o, cfg, x, y, tx, ty, r);
}

// The checks of one variant, in the order of the report.
bool check_variant(const Options& o, const Module& m, const SyncTestConfig& cfg, std::vector<CheckResult>* out) {
  std::vector<std::string> args;
  if (!o.sim_lib.empty()) args = {"--sim-lib", o.sim_lib};
  else args = {"--sim", std::string(m.name)};
  const std::string settings = m.settings_text(cfg.world.settings);
  args.insert(args.end(), {"--players", std::to_string(cfg.world.players), "--ticks", std::to_string(cfg.ticks),
                           "--seed", std::to_string(cfg.seed)});
  if (!settings.empty()) args.insert(args.end(), {"--world", settings});
  // The memory check's second run also has its heap blocks moved: a step that takes an order from
  // addresses (a hash table keyed by pointers) differs even where two processes would get the
  // same addresses (no ASLR).
  std::vector<std::string> shifted_args = args;
  shifted_args.insert(shifted_args.end(), {"--heap-shift", "1"});
  const Child plain{args, ""}, low{args, perturbed_env(0x5a)}, high{shifted_args, perturbed_env(0xa5)};
  Trace a, b, c, d;
  if (!child_trace(plain, &a) || !child_trace(plain, &b) || !child_trace(low, &c) || !child_trace(high, &d)) return false;
  LOCKSTEP_LOG_INFO("checking %.*s, %s (%s): %u ticks", static_cast<int>(m.name.size()), m.name.data(),
                    cfg.variant.c_str(), settings.c_str(), cfg.ticks);
  CheckResult replay = check_replay(a, b);
  if (!replay.ok) localize_children(o, cfg, plain, plain, a, b, &replay);
  // Two plain runs that already disagree say nothing about memory; the replay check has the news.
  CheckResult memory = replay.ok ? check_memory(c, d) : CheckResult{"memory", true, "", 0, -1, "", "not judged: the "
                                                                    "replay check failed in this variant", {}, {}, {}};
  if (!memory.ok) localize_children(o, cfg, low, high, c, d, &memory);
  out->push_back(std::move(replay));
  out->push_back(std::move(memory));
  out->push_back(check_rollback(cfg));
  out->push_back(check_history(cfg));
  for (CheckResult& r : check_state_copies(cfg)) out->push_back(std::move(r));
  out->push_back(check_localization(cfg));
  std::uint64_t changed = 0;
  if (const std::string ch = changed_setting(m, cfg.world); !ch.empty()) {
    std::vector<std::string> fa = args;
    fa.insert(fa.end(), {"--fingerprint-of", ch});
    std::string text;
    if (run_child("", fa, &text)) changed = std::strtoull(text.c_str(), nullptr, 16);
  }
  out->push_back(check_fingerprint(m.create(cfg.world)->fingerprint(), a.fingerprint, changed));
  for (CheckResult& r : *out) {
    if (r.ok) continue;
    r.variant = cfg.variant;
    // A failure at a tick that no cross-process bundle covers gets one of its own.
    if (!o.bundle_dir.empty() && r.bundle.empty() && r.tick > 0 && r.check != "replay" && r.check != "memory" &&
        r.tick <= cfg.ticks)
      write_local_bundle(o, cfg, &r);
  }
  return true;
}

// One result per check over all variants: the first failure, or a pass that says how many held.
std::vector<CheckResult> merge_variants(const std::vector<std::vector<CheckResult>>& per_variant) {
  std::vector<CheckResult> merged;
  if (per_variant.empty()) return merged;
  for (std::size_t k = 0; k < per_variant[0].size(); ++k) {
    CheckResult r = per_variant[0][k];
    for (const auto& v : per_variant)
      if (k < v.size() && !v[k].ok) {
        r = v[k];
        break;
      }
    if (r.ok && per_variant.size() > 1) r.detail += " (each of " + std::to_string(per_variant.size()) + " variants)";
    merged.push_back(std::move(r));
  }
  return merged;
}

int run(Options o) {
  int code = 0;
  const Module* m = module_from_options(o.sim, o.sim_lib, &code);
  if (!m) return code;
  o.cfg.module = m;
  // The worlds: the one --world names, or the module's default and golden worlds.
  std::vector<WorldChoice> worlds;
  std::string text, error;
  if (!o.world.empty()) {
    WorldChoice w{"given", {}};
    if (!world_settings_text(o.world, &text, &error) || !m->parse_world(text, &w.world, &error)) {
      LOCKSTEP_LOG_ERROR("--world: %s", error.c_str());
      return 2;
    }
    worlds.push_back(std::move(w));
  } else {
    WorldChoice def{"default", {}};
    if (!m->parse_world("", &def.world, &error)) {
      LOCKSTEP_LOG_ERROR("the %.*s module cannot parse its default world: %s", static_cast<int>(m->name.size()),
                         m->name.data(), error.c_str());
      return 2;
    }
    worlds.push_back(def);
    WorldChoice golden{"golden", {}};
    if (!m->golden_world.empty() && m->parse_world(m->golden_world, &golden.world, &error) &&
        golden.world.settings != def.world.settings)
      worlds.push_back(std::move(golden));
  }
  if (o.describe) {
    std::printf("%s\n", json_text(description_json(describe_module(*m, worlds[0].world)), 1).c_str());
    return 0;
  }
  const std::vector<std::uint32_t> players =
      o.players != 0 ? std::vector<std::uint32_t>{o.players} : default_player_counts(*m, worlds[0].world);
  if (o.emit_trace || o.emit_state >= 0 || !o.changed_world.empty()) {  // a child run: one world, one count
    if (o.heap_shift != 0) {
      // Fresh blocks of every size class now come from further on (blocks freed at start-up may
      // still be reused where they were), so an order taken from addresses (an unordered_map
      // keyed by pointer, whose buckets are the address modulo a prime) comes out differently
      // from the other child's.
      std::size_t k = 0;
      for (std::uint32_t round = 0; round < o.heap_shift; ++round)
        for (std::size_t size = 8; size <= 4096; size += 8) g_heap_shift[k++] = std::malloc(size);
    }
    o.cfg.world = worlds[0].world;
    o.cfg.world.players = players.empty() ? 2 : players[0];
    if (!m->create(o.cfg.world)) return 2;
    if (!o.changed_world.empty()) {  // the fingerprint of a world with one setting changed
      WorldParams w = o.cfg.world;
      if (!m->parse_world(o.changed_world, &w, &error)) return 2;
      std::printf("%s\n", hash_hex(m->create(w)->fingerprint()).c_str());
      return 0;
    }
    if (o.emit_state >= 0) {
      std::vector<std::uint8_t> state;
      if (!run_state(o.cfg, static_cast<Tick>(o.emit_state), &state, &error)) return 1;
      std::printf("%s\n", bytes_hex(state).c_str());
      return 0;
    }
    Trace t;
    if (!run_trace(o.cfg, &t, &error)) return 1;
    std::fputs(trace_text(t).c_str(), stdout);
    return 0;
  }
  if (!o.bundle_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.bundle_dir, ec);
    if (ec) {
      LOCKSTEP_LOG_ERROR("--bundle-dir %s: %s", o.bundle_dir.c_str(), ec.message().c_str());
      return 2;
    }
  }
  const std::vector<SyncTestConfig> variants = synctest_variants(o.cfg, worlds, players);
  if (variants.empty()) {
    LOCKSTEP_LOG_ERROR("the %.*s module cannot build a world of these settings and player counts",
                       static_cast<int>(m->name.size()), m->name.data());
    return 2;
  }
  std::vector<std::vector<CheckResult>> per_variant;
  for (const SyncTestConfig& v : variants) {
    per_variant.emplace_back();
    if (!check_variant(o, *m, v, &per_variant.back())) return 1;
  }
  const std::vector<CheckResult> results = merge_variants(per_variant);

  bool ok = true;
  Json checks = Json::array(), variant_list = Json::array(), counts = Json::array();
  for (const CheckResult& r : results) {
    ok = ok && r.ok;
    checks.push_back(result_json(r));
    if (r.ok) LOCKSTEP_LOG_INFO("ok   %-12s %s", r.check.c_str(), r.detail.c_str());
    else LOCKSTEP_LOG_ERROR("FAIL %-12s %s, tick %u%s%s: %s", r.check.c_str(), r.variant.c_str(), r.tick,
                            r.entity >= 0 ? (", entity " + std::to_string(r.entity)).c_str() : "",
                            r.field.empty() ? "" : (", field " + r.field).c_str(), r.detail.c_str());
  }
  for (const SyncTestConfig& v : variants)
    variant_list.push_back(Json{{"name", v.variant}, {"settings", m->settings_text(v.world.settings)},
                                {"players", v.world.players}, {"seed", v.seed}});
  for (const std::uint32_t n : players) counts.push_back(n);
  const Json report{{"sim", std::string(m->name)}, {"settings", m->settings_text(variants[0].world.settings)},
                    {"players", counts}, {"ticks", o.cfg.ticks}, {"seed", o.cfg.seed}, {"rollback", o.cfg.rollback},
                    {"history", o.cfg.history}, {"libraries", libraries_json(m->libraries)}, {"variants", variant_list}, {"ok", ok}, {"checks", checks}};
  if (o.report.empty()) {
    std::printf("%s\n", json_text(report).c_str());
  } else {
    std::ofstream out(o.report);
    out << json_text(report, 1) << "\n";
    out.flush();
    if (!out) {
      LOCKSTEP_LOG_ERROR("cannot write --report %s", o.report.c_str());
      return 1;
    }
  }
  // A report that cannot be written is a runtime failure: CI must not read an old one as a pass.
  if (!o.junit.empty() && !write_junit(o.junit, std::string(m->name), results, m->libraries)) return 1;
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-synctest");
  CLI::App app{"lockstep-synctest: the desync checks on a simulation module, for CI: replay equality across "
               "processes, the same with heap memory filled with other bytes (uninitialised fields, padding), rollback "
               "(save, step k, load, step again), history (a world run from tick 0 against one loaded from its bytes), "
               "serialization round trip, clone and assign, hash of the serialized "
               "bytes, desync localization of one-bit changes, fingerprint stability; over several worlds, player "
               "counts and seeds.\n"
               "Exit codes: 0 every check holds, 1 runtime failure, 2 bad usage, 3 a check failed."};
  app.set_version_flag("--version", std::string("lockstep-synctest ") + kVersion);
  return lockstep::cli::main_with<Options>(app, argc, argv, declare, run);
}
