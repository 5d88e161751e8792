// Server cost per client beside a bare ENet relay. Sessions of 4 bot clients, increasing in
// number: the server processes (lockstep-server, one per session, as users host them) share one
// core; their clients run in one lockstep-bench-load process on the other core. Then the same
// count of lockstep-bench-relay processes moves packets of the same sizes for raw clients.
// Each server and relay reports the CPU it used per tick while ticks ran, and its tick lateness.
// Relay mode's CPU is set against the bare relay's from a further run with both fleets on the
// server core at once, each with its own load process.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/datagram_check.hpp"

namespace lockstep::bench {
namespace {

namespace fs = std::filesystem;
}  // namespace

double json_number(const std::string& text, const std::string& pointer) {
  const Json doc = json_parse(text);
  if (doc.is_discarded()) return 0;
  const Json::json_pointer at(pointer);
  return doc.contains(at) && doc[at].is_number() ? doc[at].get<double>() : 0;
}

int spawn(const std::vector<std::string>& argv, int cpu, const std::string& log) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

namespace {

constexpr std::uint32_t kPlayers = 4;  // players in each session of a fleet

struct FleetResult {
  bool ok = false;
  double cpu_us_per_client_tick = 0;  ///< summed over processes, divided by players
  double worst_p99_us = 0, median_p99_us = 0;
  /// The worst server's p99 of its own lateness (ServerStats::own_lateness: without the wait for
  /// players' late inputs; lockstep's servers only, the bare relay's summary has none, 0).
  double worst_own_p99_us = 0;
  double up = 0, down = 0;            ///< wire bytes per client-tick, mean over processes
  /// A process hosting several sessions (--sessions): how late the machine woke its thread for its
  /// deadlines (the summaries' scheduling.wake_delay_us), worst and count over 1 ms; -1 if not given.
  double wake_delay_max_us = -1, wakes_over_1ms = -1;
  std::vector<double> cpu_us_per_tick, p99_us;  ///< each server's, in session order
  std::string error;
};

/// A fleet of `sessions` servers (or relays, when up/down payload sizes are given) and the load
/// process of their clients, started and not yet waited for. Fleets with different `lane`s can
/// run at once: each has its own ports and files.
struct Fleet {
  std::vector<pid_t> servers;
  pid_t loader = -1;
  fs::path dir;
  std::string prefix;
  std::uint32_t sessions = 0;
};

/// Starts a fleet. With busy_poll the load process spins on its core; a smoke run, sharing the
/// machine with other tests, leaves it off.
Fleet start_fleet(const fs::path& bin, const fs::path& dir, std::uint32_t sessions, std::uint32_t ticks, bool relay,
                  int up_payload, int down_payload, bool busy_poll, const std::string& token_key = "",
                  const std::string& game_file = "", int lane = 0, bool odd_ops_ports = false, bool hosted = false,
                  bool realtime = false) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int server_cpu = cpus >= 2 ? 0 : -1, load_cpu = cpus >= 2 ? 1 : -1;
  // Below Linux's ephemeral range (32768 and up), so no client socket can hold a server's port,
  // and above the end-to-end tests' ports (20000-27999), so a smoke run beside them cannot collide.
  const auto base_port = static_cast<std::uint16_t>(28000 + (getpid() % 17) * 256 + lane * 128);
  Fleet f;
  f.dir = dir;
  f.prefix = "lane" + std::to_string(lane) + "-";
  f.sessions = sessions;
  for (std::uint32_t s = 0; s < sessions; ++s) fs::remove(dir / (f.prefix + "summary-" + std::to_string(s)));
  // Hosted: one lockstep-server process holds every session (--sessions), on one thread.
  for (std::uint32_t s = 0; s < (hosted ? 1 : sessions); ++s) {
    const std::string port = std::to_string(base_port + s),
                      summary = (dir / (f.prefix + "summary-" + (hosted ? std::string("{session}") : std::to_string(s)))).string();
    std::vector<std::string> argv;
    if (relay)
      argv = {(bin / "lockstep-bench-relay").string(), "--port", port, "--players", std::to_string(kPlayers), "--ticks",
              std::to_string(ticks), "--down-bytes", std::to_string(down_payload), "--summary", summary};
    else
      argv = {(bin / "lockstep-server").string(), "--port", port, "--players", std::to_string(kPlayers), "--ticks",
              std::to_string(ticks), "--summary", summary};
    if (!token_key.empty()) argv.insert(argv.end(), {"--token-key", token_key});
    if (!game_file.empty()) argv.insert(argv.end(), {"--relay", game_file});  // lockstep-server without the simulation
    if (hosted) argv.insert(argv.end(), {"--sessions", std::to_string(sessions)});
    if (realtime) argv.push_back("--realtime");
    if (odd_ops_ports && s % 2 == 1) argv.insert(argv.end(), {"--metrics-port", port, "--metrics-bind", "127.0.0.1"});  // TCP, the UDP port's number
    f.servers.push_back(spawn(argv, server_cpu, (dir / (f.prefix + "server-" + std::to_string(s) + ".log")).string()));
  }
  usleep(200'000 + 2'000 * sessions);  // let every server bind before its clients knock
  std::vector<std::string> load{(bin / "lockstep-bench-load").string(), "--base-port", std::to_string(base_port),
                                "--sessions", std::to_string(sessions), "--players", std::to_string(kPlayers)};
  if (busy_poll) load.push_back("--busy-poll");
  if (relay) load.insert(load.end(), {"--raw", std::to_string(up_payload)});
  if (!token_key.empty()) load.insert(load.end(), {"--token-key", token_key});
  f.loader = spawn(load, load_cpu, (dir / (f.prefix + "load.log")).string());
  return f;
}

/// Waits for a fleet and reads its servers' summaries.
FleetResult finish_fleet(const Fleet& f) {
  FleetResult r;
  int status = 0;
  bool all_ok = true;
  for (pid_t p : f.servers) {
    waitpid(p, &status, 0);
    all_ok = all_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  waitpid(f.loader, &status, 0);
  all_ok = all_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::vector<double> p99;
  double cpu = 0;
  for (std::uint32_t s = 0; s < f.sessions; ++s) {
    std::ifstream in(f.dir / (f.prefix + "summary-" + std::to_string(s)));
    std::stringstream text;
    text << in.rdbuf();
    const std::string t = text.str();
    all_ok = all_ok && !t.empty();
    cpu += json_number(t, "/cpu_us_per_tick");
    p99.push_back(json_number(t, "/lateness_us/p99"));
    r.worst_own_p99_us = std::max(r.worst_own_p99_us, json_number(t, "/own_lateness_us/p99"));
    r.cpu_us_per_tick.push_back(json_number(t, "/cpu_us_per_tick"));
    r.p99_us.push_back(p99.back());
    if (s == 0 && json_number(t, "/scheduling/wake_delay_us/wakes") > 0) {
      r.wake_delay_max_us = json_number(t, "/scheduling/wake_delay_us/max");
      r.wakes_over_1ms = json_number(t, "/scheduling/wake_delay_us/over_1ms");
    }
    r.up += json_number(t, "/wire_bytes_per_client_tick/up") / f.sessions;
    r.down += json_number(t, "/wire_bytes_per_client_tick/down") / f.sessions;
  }
  std::sort(p99.begin(), p99.end());
  r.cpu_us_per_client_tick = cpu / (static_cast<double>(f.sessions) * kPlayers);
  r.worst_p99_us = p99.empty() ? 0 : p99.back();
  r.median_p99_us = p99.empty() ? 0 : p99[p99.size() / 2];
  r.ok = all_ok && cpu > 0;
  if (!all_ok) r.error = "a process failed; logs in " + f.dir.string();
  return r;
}

/// Runs one fleet alone.
FleetResult run_fleet(const fs::path& bin, const fs::path& dir, std::uint32_t sessions, std::uint32_t ticks, bool relay,
                      int up_payload, int down_payload, bool busy_poll, const std::string& token_key = "",
                      const std::string& game_file = "") {
  return finish_fleet(start_fleet(bin, dir, sessions, ticks, relay, up_payload, down_payload, busy_poll, token_key, game_file));
}

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// How quiet the machine was while a row ran, for a reader to judge its figures: the load
/// average when the section began, before any of its fleets ran (/proc/loadavg; later its own
/// load process, which spins on a core, is in it), and the share of the CPU time the hypervisor
/// took from this VM during the row (steal, /proc/stat).
struct Quiet {
  double load1 = 0;
  std::uint64_t steal = 0, total = 0;
  static Quiet now() {
    Quiet q;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &q.load1) != 1) q.load1 = -1;
      std::fclose(f);
    }
    if (std::FILE* f = std::fopen("/proc/stat", "r")) {
      unsigned long long v[8] = {};
      if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        for (const unsigned long long x : v) q.total += x;
        q.steal = v[7];
      }
      std::fclose(f);
    }
    return q;
  }
  /// "load 0.31 when the section began, steal 0.2 % of the CPU time during the row"; quiet when
  /// that load was under 0.5 per core and steal under 2 %.
  [[nodiscard]] std::string since(double section_load1, bool* quiet) const {
    const Quiet end = now();
    const double steal_pct = end.total > total ? 100.0 * static_cast<double>(end.steal - steal) / static_cast<double>(end.total - total) : 0;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *quiet = section_load1 >= 0 && section_load1 < 0.5 * static_cast<double>(cpus) && steal_pct < 2.0;
    return fmt("machine: load %.2f when the section began, steal %.1f %% of the CPU time during the row (", section_load1, steal_pct) +
           (*quiet ? "quiet" : "busy: figures may move") + ")";
  }
};

}  // namespace

void run_server(const Options& opt, std::vector<Row>& rows) {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path dir = fs::temp_directory_path() / ("lockstep-bench-server-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::uint32_t ticks = opt.quick ? 100 : 1000;
  const std::vector<std::uint32_t> counts = !opt.sessions.empty() ? opt.sessions
                                          : opt.quick ? std::vector<std::uint32_t>{1, 2}
                                                      : std::vector<std::uint32_t>{1, 4, 8, 32, 64, 128};
  bool failed = false;
  const double section_load = Quiet::now().load1;
  // Relay mode hosts the same game (the default module's default world) from its description.
  const std::string game_file = (dir / "game.json").string();
  if (std::system(("'" + (bin / "lockstep-synctest").string() + "' --describe > '" + game_file + "' 2>/dev/null").c_str()) != 0) {
    std::fprintf(stderr, "lockstep-bench: lockstep-synctest --describe failed\n");
    g_section_failed = true;
    return;
  }
  // The most sessions of 4 players each of the three held with a worst-server p99 lateness of
  // 2 ms or less.
  std::uint32_t held_ours = 0, held_relay_mode = 0, held_relay_ordinary = 0, held_relay_apart = 0, held_bare = 0;
  // Each count runs ours, ours in relay mode and the bare relay, side by side, `reps` times;
  // medians are reported. A run of 128 sessions takes about 25 s, so at most 3 repetitions when
  // 128 is among the counts; up to 7 for smaller ones (--sessions), the ratio's runs vary by 10 %.
  const bool large = *std::max_element(counts.begin(), counts.end()) > 16;
  const int reps = opt.quick ? 1 : std::min(opt.repetitions, large ? 3 : 7);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (std::uint32_t n : counts) {
    const Quiet began = Quiet::now();
    std::vector<double> cpu, relay_cpu, ratio, worst, mid, relay_worst, rm_cpu, rm_ratio, rm_worst;
    std::vector<double> pair_rm_cpu, pair_bare_cpu, pair_ratio;  // relay mode and the bare relay at once
    std::vector<double> hosted_cpu, hosted_ratio, hosted_worst, hosted_own;  // relay mode hosting all n in one process
    // The same with --realtime: its sessions' worst and median p99, and how late its thread was woken.
    std::vector<double> rt_worst, rt_mid, rt_own, rt_wake_max, rt_wakes_late, wake_max, wakes_late;
    int pair_failed = 0;  // paired runs that did not finish (the core saturated)
    FleetResult ours, relay, relay_mode, hosted, hosted_rt;
    bool ok = true;
    for (int rep = 0; rep < reps; ++rep) {
      std::fprintf(stderr, "lockstep-bench: server row, %u sessions, run %d of %d ...\n", n, rep + 1, reps);
      ours = run_fleet(bin, dir, n, ticks, false, 0, 0, !opt.quick);
      // The relay moves packets of our sizes: the UDP payload less ENet's 12 bytes of header and
      // command, and 28 bytes of IPv4+UDP header.
      const int up = std::max(8, static_cast<int>(ours.up - 40)), down = std::max(8, static_cast<int>(ours.down - 40));
      relay = run_fleet(bin, dir, n, ticks, true, up, down, !opt.quick);
      relay_mode = run_fleet(bin, dir, n, ticks, false, 0, 0, !opt.quick, "", game_file);
      hosted = finish_fleet(start_fleet(bin, dir, n, ticks, false, 0, 0, !opt.quick, "", game_file, 0, false, true));
      // As an operator packing sessions on a core runs it: the ticks' thread at real-time priority,
      // so that other threads on the core, the kernel's own included, give way when a tick falls due.
      hosted_rt = finish_fleet(start_fleet(bin, dir, n, ticks, false, 0, 0, !opt.quick, "", game_file, 0, false, true, true));
      // Relay mode's CPU against the bare relay's, both fleets on the server core at once, so
      // that both meet the same neighbours, caches and machine: runs minutes apart on this VM
      // differ by more than the gap being measured. Each fleet has its own load process. Which
      // starts first alternates: the tick clocks' phases follow the start, and the server that
      // wakes first after the core idles pays for waking it. Relay mode as an operator runs it:
      // the n sessions in one process (--sessions); the bare relay as ENet's loop is written, a
      // process a session.
      Fleet pair[2];  // [0] relay mode, [1] the bare relay; lane = index
      for (const int lane : {rep % 2, 1 - rep % 2})
        pair[lane] = start_fleet(bin, dir, n, ticks, lane == 1, up, down, !opt.quick, "", lane == 0 ? game_file : "", lane,
                                 false, lane == 0);
      const FleetResult pair_rm = finish_fleet(pair[0]), pair_bare = finish_fleet(pair[1]);
      if (!ours.ok || !relay.ok || !relay_mode.ok || !hosted.ok || !hosted_rt.ok) {
        std::fprintf(stderr, "lockstep-bench: server row at %u sessions: %s\n", n,
                     (!ours.ok ? ours : !relay.ok ? relay : !relay_mode.ok ? relay_mode : !hosted.ok ? hosted : hosted_rt).error.c_str());
        failed = true;
        ok = false;
        g_section_failed = true;
      }
      // Both fleets at once put twice the sessions on the core: past what it holds (128 and
      // 128), a bare relay that cannot finish its ticks in time ends with 1. That run is left
      // out of the ratio and counted in the row's note; the fleets run apart are the check.
      if (!pair_rm.ok || !pair_bare.ok) {
        std::fprintf(stderr, "lockstep-bench: server row at %u sessions, both fleets at once: %s\n", n,
                     (!pair_rm.ok ? pair_rm : pair_bare).error.c_str());
        ++pair_failed;
      } else {
        pair_rm_cpu.push_back(pair_rm.cpu_us_per_client_tick);
        pair_bare_cpu.push_back(pair_bare.cpu_us_per_client_tick);
        pair_ratio.push_back(pair_bare.cpu_us_per_client_tick > 0 ? pair_rm.cpu_us_per_client_tick / pair_bare.cpu_us_per_client_tick : 0);
      }
      cpu.push_back(ours.cpu_us_per_client_tick);
      relay_cpu.push_back(relay.cpu_us_per_client_tick);
      ratio.push_back(relay.cpu_us_per_client_tick > 0 ? ours.cpu_us_per_client_tick / relay.cpu_us_per_client_tick : 0);
      worst.push_back(ours.worst_p99_us);
      mid.push_back(ours.median_p99_us);
      relay_worst.push_back(relay.worst_p99_us);
      rm_cpu.push_back(relay_mode.cpu_us_per_client_tick);
      rm_ratio.push_back(relay.cpu_us_per_client_tick > 0 ? relay_mode.cpu_us_per_client_tick / relay.cpu_us_per_client_tick : 0);
      rm_worst.push_back(relay_mode.worst_p99_us);
      hosted_cpu.push_back(hosted.cpu_us_per_client_tick);
      hosted_ratio.push_back(relay.cpu_us_per_client_tick > 0 ? hosted.cpu_us_per_client_tick / relay.cpu_us_per_client_tick : 0);
      hosted_worst.push_back(hosted.worst_p99_us);
      hosted_own.push_back(hosted.worst_own_p99_us);
      rt_worst.push_back(hosted_rt.worst_p99_us);
      rt_mid.push_back(hosted_rt.median_p99_us);
      rt_own.push_back(hosted_rt.worst_own_p99_us);
      rt_wake_max.push_back(hosted_rt.wake_delay_max_us);
      rt_wakes_late.push_back(hosted_rt.wakes_over_1ms);
      wake_max.push_back(hosted.wake_delay_max_us);
      wakes_late.push_back(hosted.wakes_over_1ms);
    }
    if (ok && median(worst) <= 2000) held_ours = n;
    if (ok && median(rt_worst) <= 2000) held_relay_mode = n;
    if (ok && median(hosted_worst) <= 2000) held_relay_ordinary = n;
    if (ok && median(rm_worst) <= 2000) held_relay_apart = n;
    if (ok && median(relay_worst) <= 2000) held_bare = n;
    const double rm = median(pair_ratio);
    const double pair_lo = pair_ratio.empty() ? 0 : *std::min_element(pair_ratio.begin(), pair_ratio.end());
    const double pair_hi = pair_ratio.empty() ? 0 : *std::max_element(pair_ratio.begin(), pair_ratio.end());
    const bool paired = !pair_ratio.empty();
    bool quiet = false;
    const std::string machine = began.since(section_load, &quiet);
    rows.push_back({"server", "relay-mode server CPU per client-tick, " + std::to_string(n) +
                                  " sessions in one process (no simulation)",
                    median(pair_rm_cpu), "us", median(pair_bare_cpu), "bare ENet relay", "<= 0.7x", ok && paired && rm <= 0.7,
                    fmt("ratio %.3fx, both fleets on the core at once (%.0f sessions each; runs ranged %.3f-%.3f", rm, static_cast<double>(n),
                        pair_lo, pair_hi) +
                        (pair_failed > 0 ? fmt("; %.0f of the paired runs left out: the core saturated, a process did not finish)",
                                               pair_failed)
                                         : std::string(")")) +
                        fmt("; run apart %.2f against %.2f us, %.3fx", median(hosted_cpu), median(relay_cpu), median(hosted_ratio)) +
                        fmt("; a process a session, run apart: %.2f us, %.3fx", median(rm_cpu), median(rm_ratio)) +
                        fmt("; lateness p99 of the worst session %.0f us (a process a session: %.0f), its own (from the "
                            "latest of the deadline, the last input's arrival, a wait for a missing input's end and the "
                            "tick before), %.0f us",
                            median(hosted_worst), median(rm_worst), median(hosted_own)) +
                        fmt("; bytes up/down %.0f/%.0f", hosted.up, hosted.down) +
                        fmt("; the simulating server %.2f us", median(cpu)) +
                        fmt("; medians of %.0f paired runs; ", reps) + machine});
    // Relay mode hosting the n sessions in one process, at real-time priority and at ordinary, run
    // apart: the worst session's p99 lateness, and the machine's part in it (how late the kernel
    // woke the thread for a deadline: its timer, and whatever held the core).
    rows.push_back({"server", "tick lateness p99, " + std::to_string(n) + " relay-mode sessions in one process, --realtime (worst session)",
                    median(rt_worst) / 1000.0, "ms", median(hosted_worst) / 1000.0, "ordinary priority",
                    n == 64 ? "<= 2 ms" : "report", ok && (n != 64 || median(rt_worst) <= 2000),
                    fmt("median session %.0f us, the worst session's own (after its inputs were in) %.0f us", median(rt_mid),
                        median(rt_own)) +
                        (median(rt_wake_max) < 0 ? std::string("; one session runs the single loop, which gives no wake delays")
                                                 : fmt("; the thread woken late by the machine: worst %.0f us, %.0f wakes over 1 ms",
                                                       median(rt_wake_max), median(rt_wakes_late)) +
                                                       fmt("; at ordinary priority: worst %.0f us, %.0f wakes over 1 ms",
                                                           median(wake_max), median(wakes_late))) +
                        fmt("; medians of %.0f runs; ", reps) + machine});
    const double r = median(ratio);
    const auto [lo, hi] = std::minmax_element(worst.begin(), worst.end());
    rows.push_back({"server", "server CPU per client-tick, " + std::to_string(n) + " sessions (" + std::to_string(4 * n) +
                                  " clients)",
                    median(cpu), "us", median(relay_cpu), "bare ENet relay", "<= 1.5x", ok && r <= 1.5,
                    fmt("ratio %.2fx; lateness p99 of the worst server %.0f us (median server %.0f), relay %.0f us", r,
                        median(worst), median(mid), median(relay_worst)) +
                        fmt("; bytes up/down %.0f/%.0f, relay %.0f/%.0f", ours.up, ours.down, relay.up, relay.down) +
                        fmt("; runs ranged %.2f-%.2fx", *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end())) +
                        fmt("; medians of %.0f runs; ", reps) + machine});
    if (n == counts.back())
      rows.push_back({"server", "tick lateness p99, " + std::to_string(n) + " sessions on one core (worst server)",
                      median(worst) / 1000.0, "ms", 2.0, "limit", "<= 2 ms", ok && median(worst) <= 2000,
                      fmt("runs ranged %.0f-%.0f us; median server %.0f us; ", *lo, *hi, median(mid)) +
                          fmt("%.0f clients served: ", 4.0 * n) + (ok ? "yes" : "no")});
  }
  // Sessions of 4 players one core holds at a worst-server p99 lateness of 2 ms or less, of the
  // counts tried (the next count tried is the bound): relay mode within one step of the bare relay,
  // or above it. A count neither holds tells nothing (the core was too busy for both).
  const auto step_of = [&](std::uint32_t n) -> long {
    return n == 0 ? -1 : static_cast<long>(std::find(counts.begin(), counts.end(), n) - counts.begin());
  };
  const bool tried_64 = std::find(counts.begin(), counts.end(), 64u) != counts.end();
  rows.push_back({"server", "sessions of 4 per core at p99 <= 2 ms, relay mode in one process, --realtime (of the counts tried)",
                  static_cast<double>(held_relay_mode), "sessions", static_cast<double>(held_bare), "bare ENet relay",
                  tried_64 ? ">= 64" : "within one step",
                  !failed && step_of(held_relay_mode) >= 0 &&
                      (tried_64 ? held_relay_mode >= 64 : step_of(held_bare) - step_of(held_relay_mode) <= 1),
                  fmt("at ordinary priority %.0f", held_relay_ordinary) +
                      fmt("; the simulating server %.0f sessions (a process a session)", held_ours) +
                      fmt("; relay mode a process a session %.0f; counts tried: ", held_relay_apart) + [&] {
                    std::string c;
                    for (std::uint32_t n : counts) c += (c.empty() ? "" : ", ") + std::to_string(n);
                    return c;
                  }() + (held_bare == 0 ? "; the bare relay held none of them" : "")});
  if (!failed) fs::remove_all(dir);
}

// Sealed play against play in the clear: the same fleet of servers and bot clients, the clients
// joining with connect tokens (a key the load process mints them with), side by side, `reps`
// times; medians of bytes and server CPU per client-tick, and their differences.
void run_seal(const Options& opt, std::vector<Row>& rows) {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path dir = fs::temp_directory_path() / ("lockstep-bench-seal-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string key = (dir / "token.key").string();
  {
    const SecretKey k = random_key();
    std::ofstream out(key);
    out << key_hex(k) << "\n";
  }
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
  const std::uint32_t ticks = opt.quick ? 100 : 1000;
  const std::uint32_t n = !opt.sessions.empty() ? opt.sessions.front() : opt.quick ? 1 : 16;
  const int reps = opt.quick ? 1 : std::max(3, std::min(opt.repetitions, 7));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  // Runs 0 and 1: this build in the clear and sealed; run 2, with --baseline-bin: the other build, sealed.
  const int kinds = opt.baseline_bin.empty() ? 2 : 3;
  std::vector<double> cpu[3], up[3], down[3], ratio, base_ratio;
  bool ok = true;
  for (int rep = 0; rep < reps; ++rep) {
    FleetResult r[3];
    for (int kind = 0; kind < kinds; ++kind) {
      static const char* const kWhat[] = {"in the clear", "sealed", "sealed, baseline build"};
      std::fprintf(stderr, "lockstep-bench: seal row, %u sessions %s, run %d of %d ...\n", n, kWhat[kind], rep + 1, reps);
      r[kind] = run_fleet(kind == 2 ? fs::path(opt.baseline_bin) : bin, dir, n, ticks, false, 0, 0, !opt.quick, kind > 0 ? key : "");
      if (!r[kind].ok) {
        std::fprintf(stderr, "lockstep-bench: seal row: %s\n", r[kind].error.c_str());
        ok = false;
        g_section_failed = true;
      }
      cpu[kind].push_back(r[kind].cpu_us_per_client_tick);
      up[kind].push_back(r[kind].up);
      down[kind].push_back(r[kind].down);
    }
    ratio.push_back(r[0].cpu_us_per_client_tick > 0 ? r[1].cpu_us_per_client_tick / r[0].cpu_us_per_client_tick : 0);
    if (kinds == 3) base_ratio.push_back(r[2].cpu_us_per_client_tick > 0 ? r[1].cpu_us_per_client_tick / r[2].cpu_us_per_client_tick : 0);
  }
  const std::string what = std::to_string(n) + " sessions of 4";
  const double up_more = median(up[1]) - median(up[0]), down_more = median(down[1]) - median(down[0]);
  rows.push_back({"seal", "wire bytes up per client-tick, sealed, " + what, median(up[1]), "B", median(up[0]), "in the clear",
                  "<= +20 B", ok && up_more <= 20, fmt("+%.1f B", up_more)});
  rows.push_back({"seal", "wire bytes down per client-tick, sealed, " + what, median(down[1]), "B", median(down[0]),
                  "in the clear", "<= +20 B", ok && down_more <= 20, fmt("+%.1f B", down_more)});
  const double r = median(ratio);
  rows.push_back({"seal", "server CPU per client-tick, sealed, " + what, median(cpu[1]), "us", median(cpu[0]), "in the clear",
                  "<= +10 %", ok && r <= 1.10,
                  fmt("ratio %.3fx (median of %.0f paired runs; runs ranged %.3f-%.3f)", r, reps,
                      *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()))});
  // The datagram check alone (PROTOCOL.md §1.1), per datagram of a play message's size and of the
  // MTU: the keyed form against the keyless CRC-32, which the clear uses.
  for (const std::size_t size : {std::size_t{120}, std::size_t{1400}}) {
    std::vector<std::uint8_t> d(size);
    for (std::size_t i = 0; i < size; ++i) d[i] = static_cast<std::uint8_t>(i * 7);
    const std::array<std::uint8_t, 16> k{1, 2, 3};
    volatile std::uint32_t sink = 0;
    constexpr int kBatch = 10000;
    const double keyed = median_ns(opt.repetitions, [&] {
      for (int i = 0; i < kBatch; ++i) sink = sink + keyed_check(k, d);
    }) / kBatch;
    const double keyless = median_ns(opt.repetitions, [&] {
      for (int i = 0; i < kBatch; ++i) sink = sink + keyless_check(d);
    }) / kBatch;
    rows.push_back({"seal", fmt("datagram check, keyed (SipHash-2-4), %.0f-byte datagram", static_cast<double>(size)), keyed, "ns", keyless,
                    "keyless (CRC-32, zlib)", "report", true, fmt("ratio %.2fx", keyless > 0 ? keyed / keyless : 0.0)});
  }
  if (kinds == 3) {
    // What this build's sealed play costs against the other build's: for the datagram check
    // (PROTOCOL.md §1.1), 4 bytes a datagram and one SipHash of it on each side.
    const double b = median(base_ratio);
    rows.push_back({"seal", "wire bytes up per client-tick, sealed, " + what + ", against the baseline build", median(up[1]), "B",
                    median(up[2]), "baseline build, sealed", "report", ok, fmt("%+.1f B", median(up[1]) - median(up[2]))});
    rows.push_back({"seal", "wire bytes down per client-tick, sealed, " + what + ", against the baseline build", median(down[1]),
                    "B", median(down[2]), "baseline build, sealed", "report", ok, fmt("%+.1f B", median(down[1]) - median(down[2]))});
    rows.push_back({"seal", "server CPU per client-tick, sealed, " + what + ", against the baseline build", median(cpu[1]), "us",
                    median(cpu[2]), "baseline build, sealed", "report", ok,
                    fmt("ratio %.3fx (median of %.0f paired runs; runs ranged %.3f-%.3f)", b, reps,
                        *std::min_element(base_ratio.begin(), base_ratio.end()),
                        *std::max_element(base_ratio.begin(), base_ratio.end()))});
  }
  if (ok) fs::remove_all(dir);
}

namespace {
// One GET of /metrics from 127.0.0.1:port, read to the end of its body (or 2 s); its bytes.
std::size_t scrape(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::size_t got = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const char ask[] = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    if (send(fd, ask, sizeof ask - 1, MSG_NOSIGNAL) > 0) {
      char buf[16384];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 2000) != 1) break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
    }
  }
  close(fd);
  return got;
}
}  // namespace

// The ops port's cost: one fleet of simulating servers in which every other server has
// --metrics-port and is scraped every second (as a Prometheus server would, far more often than
// its usual 15 s), so that the servers with and without it share the core, the load process and
// the moment. Server CPU per client-tick (the whole process: the ops thread's scrapes count) and
// lateness p99, the two halves set against each other in each of `reps` runs.
void run_metrics(const Options& opt, std::vector<Row>& rows) {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path dir = fs::temp_directory_path() / ("lockstep-bench-metrics-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::uint32_t ticks = opt.quick ? 200 : 1500;
  const std::uint32_t n = std::max<std::uint32_t>(2, !opt.sessions.empty() ? opt.sessions.front() : opt.quick ? 2 : 16) / 2 * 2;
  const int reps = opt.quick ? 1 : std::max(3, std::min(opt.repetitions, 9));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::vector<double> cpu_on, cpu_off, ratio, p99_on, p99_off;
  std::uint64_t scrapes = 0, scraped_bytes = 0;
  bool ok = true;
  for (int rep = 0; rep < reps; ++rep) {
    std::fprintf(stderr, "lockstep-bench: metrics row, %u sessions, every other one with the ops port, run %d of %d ...\n",
                 n, rep + 1, reps);
    const Fleet fleet = start_fleet(bin, dir, n, ticks, false, 0, 0, !opt.quick, "", "", 0, true);
    const auto base_port = static_cast<std::uint16_t>(28000 + (getpid() % 17) * 256);
    std::atomic<bool> done{false};
    std::thread scraper([&] {
      while (!done) {
        for (std::uint32_t s = 1; s < n && !done; s += 2)
          if (const std::size_t b = scrape(static_cast<std::uint16_t>(base_port + s)); b > 0) {
            ++scrapes;
            scraped_bytes += b;
          }
        for (int i = 0; i < 10 && !done; ++i) usleep(100'000);
      }
    });
    const FleetResult r = finish_fleet(fleet);
    done = true;
    scraper.join();
    if (!r.ok || r.cpu_us_per_tick.size() != n) {
      std::fprintf(stderr, "lockstep-bench: metrics row: %s\n", r.error.c_str());
      ok = false;
      g_section_failed = true;
      continue;
    }
    double on = 0, off = 0, worst_on = 0, worst_off = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      (s % 2 ? on : off) += r.cpu_us_per_tick[s] / (n / 2) / kPlayers;
      (s % 2 ? worst_on : worst_off) = std::max(s % 2 ? worst_on : worst_off, r.p99_us[s]);
    }
    cpu_on.push_back(on);
    cpu_off.push_back(off);
    ratio.push_back(off > 0 ? on / off : 0);
    p99_on.push_back(worst_on);
    p99_off.push_back(worst_off);
  }
  // One more run with the odd servers' ops ports flooded: requests back to back from the bench, 8
  // connections each held open saying nothing, and one scraper each that never reads its answer.
  double flood_p99_on = 0, flood_p99_off = 0;
  std::uint64_t flood_requests = 0;
  if (ok && !opt.quick) {
    std::fprintf(stderr, "lockstep-bench: metrics row, %u sessions, the ops ports flooded ...\n", n);
    const Fleet fleet = start_fleet(bin, dir, n, ticks, false, 0, 0, true, "", "", 0, true);
    const auto base_port = static_cast<std::uint16_t>(28000 + (getpid() % 17) * 256);
    std::atomic<bool> done{false};
    std::vector<int> held;
    std::thread flood([&] {
      usleep(500'000);
      for (std::uint32_t s = 1; s < n; s += 2)
        for (int i = 0; i < 9; ++i) {
          const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(static_cast<std::uint16_t>(base_port + s));
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && i == 0) {
            const char ask[] = "GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n";  // and never read
            (void)!send(fd, ask, sizeof ask - 1, MSG_NOSIGNAL);
          }
          held.push_back(fd);
        }
      while (!done)
        for (std::uint32_t s = 1; s < n && !done; s += 2)
          if (scrape(static_cast<std::uint16_t>(base_port + s)) > 0) ++flood_requests;
    });
    const FleetResult r = finish_fleet(fleet);
    done = true;
    flood.join();
    for (const int fd : held) close(fd);
    if (r.ok && r.p99_us.size() == n)
      for (std::uint32_t s = 0; s < n; ++s) (s % 2 ? flood_p99_on : flood_p99_off) = std::max(s % 2 ? flood_p99_on : flood_p99_off, r.p99_us[s]);
  }
  if (ratio.empty()) return;
  const double r = median(ratio);
  const std::string what = std::to_string(n / 2) + " of " + std::to_string(n) + " sessions of 4";
  rows.push_back({"metrics", "server CPU per client-tick, ops port scraped every second, " + what, median(cpu_on), "us",
                  median(cpu_off), "the others, no ops port", "<= 1.02x", ok && r <= 1.02,
                  fmt("ratio %.3fx (median of %.0f runs, both halves of one fleet on one core; runs ranged %.3f-%.3f)", r,
                      static_cast<double>(ratio.size()), *std::min_element(ratio.begin(), ratio.end()),
                      *std::max_element(ratio.begin(), ratio.end())) +
                      fmt("; %.0f scrapes of %.0f bytes each", static_cast<double>(scrapes),
                          scrapes ? static_cast<double>(scraped_bytes) / static_cast<double>(scrapes) : 0.0)});
  rows.push_back({"metrics", "tick lateness p99 of the worst server, ops port scraped every second, " + what,
                  median(p99_on), "us", median(p99_off), "the others, no ops port", "report", ok,
                  fmt("runs ranged %.0f-%.0f us, without %.0f-%.0f us", *std::min_element(p99_on.begin(), p99_on.end()),
                      *std::max_element(p99_on.begin(), p99_on.end()), *std::min_element(p99_off.begin(), p99_off.end()),
                      *std::max_element(p99_off.begin(), p99_off.end()))});
  if (flood_requests > 0)
    rows.push_back({"metrics", "tick lateness p99 of the worst server, ops port flooded, " + what, flood_p99_on, "us",
                    flood_p99_off, "the others, no ops port", "report", true,
                    fmt("%.0f requests answered back to back, 9 connections held open on each port, one never reading",
                        static_cast<double>(flood_requests))});
  if (ok) fs::remove_all(dir);
}

}  // namespace lockstep::bench
