// Sessions across internet latencies, as users run them: lockstep-server, 3 lockstep-client bots
// and one lockstep-netsim relay per client (one-way delay with +-20 % jitter, 0 % and 5 % loss
// both ways), real processes on loopback. Per session: ticks per second after the first 2 s,
// inputs filled, and the worst player's input latency p50 beside its bound (round trip + input
// delay + 2 x jitter + 15 ms). Then a mixed session (direct, 25 ms, 250 ms) and the same without
// its far player: the direct player's latency must not move by more than 15 ms.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"

namespace lockstep::bench {
namespace {

namespace fs = std::filesystem;
constexpr int kInputDelayTicks = 2;

struct Link {
  double delay_ms = 0, jitter_ms = 0, loss_pct = 0;  // delay 0: straight to the server
};

struct SessionFigures {
  bool ok = false;
  double tps = 0;           // ticks per second after the first 2 s
  double filled_pct = 0;    // of all players' inputs
  std::vector<double> p50_ms, p99_ms, bound_ms;  // per player
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SessionFigures run_session(const fs::path& bin, const fs::path& dir, std::uint16_t port, std::uint32_t ticks,
                           const std::vector<Link>& links) {
  fs::create_directories(dir);
  const auto n = static_cast<std::uint32_t>(links.size());
  std::vector<int> pids;
  const int server = spawn({(bin / "lockstep-server").string(), "--port", std::to_string(port), "--players",
                            std::to_string(n), "--ticks", std::to_string(ticks), "--summary", (dir / "server.json").string()},
                           -1, (dir / "server.err").string());
  std::vector<int> relays, clients;
  usleep(200'000);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Link& l = links[i];
    std::uint16_t p = port;
    if (l.delay_ms > 0) {
      p = static_cast<std::uint16_t>(port + 1 + i);
      relays.push_back(spawn({(bin / "lockstep-netsim").string(), "--listen", std::to_string(p), "--forward",
                              "127.0.0.1:" + std::to_string(port), "--delay", std::to_string(l.delay_ms), "--jitter",
                              std::to_string(l.jitter_ms), "--loss", std::to_string(l.loss_pct), "--seed",
                              std::to_string(i + 1)},
                             -1, (dir / ("ns" + std::to_string(i) + ".err")).string()));
    }
    clients.push_back(spawn({(bin / "lockstep-client").string(), "--connect", "127.0.0.1:" + std::to_string(p), "--name",
                             "p" + std::to_string(i), "--bot", std::to_string(i + 1), "--summary",
                             (dir / ("c" + std::to_string(i) + ".json")).string()},
                            -1, (dir / ("c" + std::to_string(i) + ".err")).string()));
  }
  SessionFigures f;
  bool ok = true;
  int status = 0;
  for (int c : clients) {
    waitpid(c, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  waitpid(server, &status, 0);
  ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  for (int r : relays) {
    kill(r, SIGINT);
    waitpid(r, &status, 0);
  }
  const std::string s = slurp(dir / "server.json");
  f.tps = json_number(s, "/ticks_per_second_after_2s");
  f.filled_pct = 100.0 * json_number(s, "/filled_inputs") / (static_cast<double>(ticks) * n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string c = slurp(dir / ("c" + std::to_string(i) + ".json"));
    f.p50_ms.push_back(json_number(c, "/latency_us/p50") / 1000);
    f.p99_ms.push_back(json_number(c, "/latency_us/p99") / 1000);
    f.bound_ms.push_back(2 * links[i].delay_ms + kInputDelayTicks * 10 + 2 * links[i].jitter_ms + 15);
  }
  f.ok = ok && !s.empty();
  if (!f.ok) std::fprintf(stderr, "lockstep-bench: latency session in %s failed\n", dir.c_str());
  return f;
}

struct Point {
  double delay_ms, loss_pct, tps, filled_pct, p50_ms, bound_ms;
};

void write_svg(const std::vector<Point>& pts, const std::string& path) {
  std::ofstream out(path);
  const double w = 900, h = 420, left = 70, right = 860, top = 40, bottom = 360;
  auto x_of = [&](double d) { return left + (right - left) * d / 500.0; };
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << w / 2 << "' y='20' text-anchor='middle' font-size='14'>3 players, one-way delay +-20 % jitter: "
      << "input latency p50 (worst player) and its bound; ticks/s and inputs filled in the labels</text>\n";
  const double max_ms = 1400;
  auto y_of = [&](double ms) { return bottom - (bottom - top) * std::min(ms, max_ms) / max_ms; };
  out << "<line x1='" << left << "' y1='" << bottom << "' x2='" << right << "' y2='" << bottom << "' stroke='black'/>\n"
      << "<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << bottom << "' stroke='black'/>\n";
  for (double ms = 0; ms <= max_ms; ms += 200)
    out << "<text x='" << left - 8 << "' y='" << y_of(ms) + 4 << "' text-anchor='end'>" << ms << "</text>\n";
  for (double d : {0.0, 100.0, 200.0, 300.0, 400.0, 500.0})
    out << "<text x='" << x_of(d) << "' y='" << bottom + 18 << "' text-anchor='middle'>" << d << " ms</text>\n";
  const char* colors[] = {"#1f77b4", "#d62728"};
  for (int li = 0; li < 2; ++li) {
    const double loss = li == 0 ? 0 : 5;
    std::string line, bound;
    for (const Point& p : pts) {
      if (p.loss_pct != loss) continue;
      line += std::to_string(x_of(p.delay_ms)) + "," + std::to_string(y_of(p.p50_ms)) + " ";
      bound += std::to_string(x_of(p.delay_ms)) + "," + std::to_string(y_of(p.bound_ms)) + " ";
      out << "<circle cx='" << x_of(p.delay_ms) << "' cy='" << y_of(p.p50_ms) << "' r='3' fill='" << colors[li] << "'/>\n"
          << "<text x='" << x_of(p.delay_ms) + 4 << "' y='" << y_of(p.p50_ms) - 6 - 14 * li << "' fill='" << colors[li]
          << "' font-size='10'>" << static_cast<int>(p.tps * 10) / 10.0 << "/s, " << static_cast<int>(p.filled_pct * 100) / 100.0
          << "% filled</text>\n";
    }
    out << "<polyline points='" << line << "' fill='none' stroke='" << colors[li] << "'/>\n"
        << "<polyline points='" << bound << "' fill='none' stroke='" << colors[li] << "' stroke-dasharray='4 3'/>\n"
        << "<text x='" << right - 200 << "' y='" << top + 20 + 16 * li << "' fill='" << colors[li] << "'>" << loss
        << " % loss: p50 (solid), bound (dashed)</text>\n";
  }
  out << "<text x='" << w / 2 << "' y='" << h - 20 << "' text-anchor='middle'>one-way delay</text>\n"
      << "<text x='20' y='" << (top + bottom) / 2 << "' transform='rotate(-90 20 " << (top + bottom) / 2
      << ")' text-anchor='middle'>ms</text>\n</svg>\n";
}

}  // namespace

void run_latency(const Options& opt, std::vector<Row>& rows) {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path dir = fs::temp_directory_path() / ("lockstep-bench-latency-" + std::to_string(getpid()));
  // Ports below Linux's ephemeral range and apart from the end-to-end tests' and the server row's.
  const auto port = static_cast<std::uint16_t>(18000 + (getpid() % 50) * 20);
  const std::uint32_t ticks = opt.quick ? 400 : 3000;
  const std::vector<double> delays = opt.quick ? std::vector<double>{50} : std::vector<double>{0, 25, 50, 100, 150, 250, 500};
  const std::vector<double> losses = opt.quick ? std::vector<double>{5} : std::vector<double>{0, 5};
  std::vector<Point> pts;
  int run = 0;
  for (double loss : losses)
    for (double d : delays) {
      const Link l{d, d * 0.2, d > 0 ? loss : 0};
      if (d == 0 && loss > 0) continue;  // a direct link has no loss to inject
      const SessionFigures f = run_session(bin, dir / std::to_string(run++), port, ticks, {l, l, l});
      if (!f.ok) g_section_failed = true;
      const auto worst = static_cast<std::size_t>(std::max_element(f.p50_ms.begin(), f.p50_ms.end()) - f.p50_ms.begin());
      const double p50 = f.p50_ms.empty() ? 0 : f.p50_ms[worst], bound = f.bound_ms.empty() ? 0 : f.bound_ms[worst];
      char label[96];
      std::snprintf(label, sizeof label, "%.0f ms +-%.0f, %.0f %% loss", d, l.jitter_ms, l.loss_pct);
      rows.push_back({"latency", std::string(label) + ": ticks/s after 2 s", f.tps, "/s", 99.5, "99.5 % of 100 Hz", ">= anchor",
                      f.tps >= 99.5, ""});
      rows.push_back({"latency", std::string(label) + ": inputs filled", f.filled_pct, "%", 0.5, "0.5 %", "<= anchor",
                      f.filled_pct <= 0.5, ""});
      rows.push_back({"latency", std::string(label) + ": input latency p50, worst", p50, "ms", bound,
                      "rtt+delay+2 jitter+15", "<= anchor", p50 <= bound,
                      "p99 " + std::to_string(static_cast<int>(f.p99_ms.empty() ? 0 : f.p99_ms[worst])) + " ms"});
      pts.push_back({d, l.loss_pct, f.tps, f.filled_pct, p50, bound});
    }
  // The mixed session and its control without the far player.
  const std::vector<Link> mixed{{0, 0, 0}, {25, 5, 0}, {250, 50, 0}};
  const SessionFigures m = run_session(bin, dir / "mixed", port, ticks, mixed);
  const SessionFigures near = run_session(bin, dir / "near", port, ticks, {mixed[0], mixed[1]});
  if (!m.ok || !near.ok) g_section_failed = true;
  rows.push_back({"latency", "mixed (direct, 25, 250 ms): ticks/s after 2 s", m.tps, "/s", 99.5, "99.5 % of 100 Hz",
                  ">= anchor", m.tps >= 99.5, ""});
  rows.push_back({"latency", "mixed: inputs filled", m.filled_pct, "%", 0.5, "0.5 %", "<= anchor", m.filled_pct <= 0.5, ""});
  const double with_far = m.p50_ms.empty() ? 0 : m.p50_ms[0], without = near.p50_ms.empty() ? 0 : near.p50_ms[0];
  rows.push_back({"latency", "mixed: direct player's latency p50", with_far, "ms", without + 15, "without far player + 15",
                  "<= anchor", with_far <= without + 15,
                  "without the far player " + std::to_string(without).substr(0, 5) + " ms"});
  if (!opt.latency_svg_path.empty()) write_svg(pts, opt.latency_svg_path);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace lockstep::bench
