// lockstep-synctest: the desync checks on any simulation module (built in or --sim-lib), for a
// team's CI. Parses options, runs the checks of synctest.hpp (two of them against runs of itself
// in separate processes), prints a JSON report and optionally a JUnit file. Exit 0 when every
// check holds, 3 when one fails, 2 for bad usage, 1 when a child run fails.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/cli.hpp"
#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/synctest.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

struct Options {
  std::string sim = std::string(default_module().name), sim_lib, world, junit, report;
  std::uint32_t players = 2;
  SyncTestConfig cfg;
  bool emit_trace = false;  // a child run: print the trace and exit
  std::string changed_world;  // with emit_trace: print only the fingerprint of this world
};

void declare(CLI::App& app, Options& o) {
  using lockstep::cli::unsigned_number;
  app.add_option("--sim", o.sim, "the simulation module (built in by name; 'list' lists them)")->capture_default_str();
  app.add_option("--sim-lib", o.sim_lib, "load the simulation module from this shared library (docs/MODULES.md)");
  app.add_option("--world", o.world, "the module's world settings, key=value,... or @FILE");
  app.add_option("--players", o.players, "player slots")->check(unsigned_number())->check(CLI::Range(1, kMaxPlayers))
      ->capture_default_str();
  app.add_option("--ticks", o.cfg.ticks, "ticks of each run")->check(unsigned_number())->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  app.add_option("--seed", o.cfg.seed, "seed of the input and command streams")->check(unsigned_number())->capture_default_str();
  app.add_option("--rollback", o.cfg.rollback, "k: ticks stepped between a save and its load")->check(unsigned_number())
      ->check(CLI::Range(1u, 64u))->capture_default_str();
  app.add_option("--sample", o.cfg.sample, "entities' worth of one-bit perturbations the desync probe must name")
      ->check(unsigned_number())->check(CLI::Range(1u, 1000u))->capture_default_str();
  app.add_option("--junit", o.junit, "also write the checks as a JUnit XML file (for CI systems)");
  app.add_option("--report", o.report, "write the JSON report to this file instead of stdout");
  app.add_flag("--emit-trace", o.emit_trace, "internal: print this run's trace (the cross-process checks run it)")->group("");
  app.add_option("--fingerprint-of", o.changed_world, "internal: print the fingerprint of this world")->group("");
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs this executable again with `args` and returns what it printed, or false.
bool run_child(const std::vector<std::string>& args, std::string* out) {
  std::array<char, 4096> self{};
  const ssize_t len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) return false;
  std::string cmd = quote(std::string(self.data(), static_cast<std::size_t>(len)));
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

bool write_junit(const std::string& path, const std::string& module, const std::vector<CheckResult>& results) {
  std::size_t failures = 0;
  for (const auto& r : results) failures += r.ok ? 0 : 1;
  std::ofstream out(path);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"lockstep-synctest\" tests=\"" << results.size()
      << "\" failures=\"" << failures << "\">\n";
  for (const auto& r : results) {
    out << "  <testcase classname=\"lockstep-synctest." << xml(module) << "\" name=\"" << xml(r.check) << "\">";
    if (!r.ok) {
      std::string where = r.tick ? " at tick " + std::to_string(r.tick) : "";
      if (r.entity >= 0) where += ", entity " + std::to_string(r.entity);
      if (!r.field.empty()) where += ", field " + r.field;
      out << "<failure message=\"" << xml(r.check + where) << "\">" << xml(r.detail) << "</failure>";
    }
    out << "</testcase>\n";
  }
  out << "</testsuite>\n";
  out.flush();
  if (out) return true;
  LOCKSTEP_LOG_ERROR("cannot write --junit %s", path.c_str());
  return false;
}

int run(Options o) {
  int code = 0;
  const Module* m = module_from_options(o.sim, o.sim_lib, &code);
  if (!m) return code;
  o.cfg.module = m;
  o.cfg.world.players = o.players;
  std::string text, error;
  if (!world_settings_text(o.world, &text, &error) || !m->parse_world(text, &o.cfg.world, &error)) {
    LOCKSTEP_LOG_ERROR("--world: %s", error.c_str());
    return 2;
  }
  if (!m->create(o.cfg.world)) {
    LOCKSTEP_LOG_ERROR("the %.*s module cannot build a world of these settings and %u players",
                       static_cast<int>(m->name.size()), m->name.data(), o.players);
    return 2;
  }
  if (!o.changed_world.empty()) {  // child: the fingerprint of a world with one setting changed
    WorldParams w = o.cfg.world;
    if (!m->parse_world(o.changed_world, &w, &error)) return 2;
    std::printf("%s\n", hash_hex(m->create(w)->fingerprint()).c_str());
    return 0;
  }
  if (o.emit_trace) {
    Trace t;
    if (!run_trace(o.cfg, &t, &error)) return 1;
    std::fputs(trace_text(t).c_str(), stdout);
    return 0;
  }

  // The cross-process runs: the same options again, twice, in children.
  std::vector<std::string> args;
  if (!o.sim_lib.empty()) args = {"--sim-lib", o.sim_lib};
  else args = {"--sim", std::string(m->name)};
  const std::string settings = m->settings_text(o.cfg.world.settings);
  args.insert(args.end(), {"--players", std::to_string(o.players), "--ticks", std::to_string(o.cfg.ticks), "--seed",
                           std::to_string(o.cfg.seed)});
  if (!settings.empty()) args.insert(args.end(), {"--world", settings});
  std::vector<Trace> traces(2);
  for (Trace& t : traces) {
    std::vector<std::string> a = args;
    a.push_back("--emit-trace");
    std::string out;
    if (!run_child(a, &out) || !parse_trace(out, &t)) {
      LOCKSTEP_LOG_ERROR("a child run of the module failed (it printed %zu bytes)", out.size());
      return 1;
    }
  }
  std::vector<CheckResult> results;
  LOCKSTEP_LOG_INFO("checking %.*s (%s, %u players): %u ticks, seed %llu", static_cast<int>(m->name.size()), m->name.data(),
                    settings.c_str(), o.players, o.cfg.ticks, static_cast<unsigned long long>(o.cfg.seed));
  results.push_back(check_replay(traces[0], traces[1]));
  results.push_back(check_rollback(o.cfg));
  for (CheckResult& r : check_state_copies(o.cfg)) results.push_back(std::move(r));
  results.push_back(check_localization(o.cfg));
  std::uint64_t changed = 0;
  if (const std::string c = changed_setting(*m, o.cfg.world); !c.empty()) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--fingerprint-of", c});
    std::string out;
    if (run_child(a, &out)) changed = std::strtoull(out.c_str(), nullptr, 16);
  }
  results.push_back(check_fingerprint(m->create(o.cfg.world)->fingerprint(), traces[0].fingerprint, changed));

  bool ok = true;
  Json checks = Json::array();
  for (const CheckResult& r : results) {
    ok = ok && r.ok;
    checks.push_back(result_json(r));
    if (r.ok) LOCKSTEP_LOG_INFO("ok   %-12s %s", r.check.c_str(), r.detail.c_str());
    else LOCKSTEP_LOG_ERROR("FAIL %-12s tick %u%s%s: %s", r.check.c_str(), r.tick,
                            r.entity >= 0 ? (", entity " + std::to_string(r.entity)).c_str() : "",
                            r.field.empty() ? "" : (", field " + r.field).c_str(), r.detail.c_str());
  }
  const Json report{{"sim", std::string(m->name)}, {"settings", settings}, {"players", o.players},
                    {"ticks", o.cfg.ticks}, {"seed", o.cfg.seed}, {"rollback", o.cfg.rollback},
                    {"ok", ok}, {"checks", checks}};
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
  if (!o.junit.empty() && !write_junit(o.junit, std::string(m->name), results)) return 1;
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-synctest");
  CLI::App app{"lockstep-synctest: the desync checks on a simulation module, for CI: replay equality across "
               "processes, rollback (save, step k, load, step again), serialization round trip, clone and assign, "
               "hash of the serialized bytes, desync localization of one-bit changes, fingerprint stability.\n"
               "Exit codes: 0 every check holds, 1 runtime failure, 2 bad usage, 3 a check failed."};
  app.set_version_flag("--version", std::string("lockstep-synctest ") + kVersion);
  return lockstep::cli::main_with<Options>(app, argc, argv, declare, run);
}
