// lockstep-bench: one run that puts every speed figure beside its anchor.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "bench.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/enet_batching.h"
#include "lockstep/version.hpp"

// The net and latency sections host servers in this process over real sockets: batched, as
// lockstep-server is.
LOCKSTEP_DEFINE_ENET_BATCHING()

namespace lockstep::bench {

double median_ns(int reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const std::int64_t a = monotonic_ns();
    fn();
    t.push_back(static_cast<double>(monotonic_ns() - a));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace lockstep::bench

int main(int argc, char** argv) {
  using namespace lockstep;
  using namespace lockstep::bench;
  CLI::App app{"lockstep-bench: speed figures of lockstep, each beside its anchor, medians of repetitions"};
  app.set_version_flag("--version", std::string("lockstep-bench ") + lockstep::kVersion);
  Options opt;
  std::string json_path;
  std::vector<std::string> sections{"pacer", "sim", "math", "net", "replay", "server", "latency"};
  app.add_option("--repetitions", opt.repetitions, "repetitions per figure (median reported)")->check(lockstep::cli::unsigned_number())->check(CLI::Range(1, 1000));
  app.add_flag("--quick", opt.quick, "smoke run: small sizes, one repetition");
  app.add_option("--json", json_path, "also write the table as JSON to this file");
  app.add_option("--only", sections, "sections to run")->check(CLI::IsMember({"pacer", "sim", "math", "net", "replay", "server", "latency", "seal", "web", "metrics"}));
  app.add_option("--svg", opt.svg_path, "write the pacer lateness plot (SVG) here");
  app.add_option("--latency-svg", opt.latency_svg_path, "write the latency section's plot (SVG) here");
  app.add_option("--wire-svg", opt.wire_svg_path, "write the net section's plot of wire bytes against players (SVG) here");
  app.add_option("--sessions", opt.sessions, "server section: session counts to run (4 clients each)")->check(lockstep::cli::unsigned_number())
      ->check(CLI::Range(1u, 256u));
  app.add_option("--baseline-bin", opt.baseline_bin,
                 "seal section: also run the sealed fleet with the lockstep-server and lockstep-bench-load of another build "
                 "(its bin directory), interleaved with this build's, to give what a change costs")
      ->check(CLI::ExistingDirectory);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (opt.quick) opt.repetitions = 1;

  std::vector<Row> rows;
  for (const auto& s : sections) {
    std::fprintf(stderr, "lockstep-bench: running %s ...\n", s.c_str());
    if (s == "pacer") run_pacer(opt, rows);
    if (s == "sim") run_sim(opt, rows);
    if (s == "math") run_math(opt, rows);
    if (s == "net") run_net(opt, rows);
    if (s == "replay") run_replay(opt, rows);
    if (s == "server") run_server(opt, rows);
    if (s == "seal") run_seal(opt, rows);
    if (s == "metrics") run_metrics(opt, rows);
    if (s == "latency") run_latency(opt, rows);
    if (s == "web") run_web(opt, rows);
  }

  std::printf("%-6s %-52s %12s %-7s %12s %-24s %-12s %-4s %s\n", "sect", "figure", "ours", "unit", "anchor", "anchor is",
              "goal", "met", "note");
  bool all_met = true;
  for (const Row& r : rows) {
    std::printf("%-6s %-52s %12.3f %-7s %12.3f %-24s %-12s %-4s %s\n", r.section.c_str(), r.name.c_str(), r.value,
                r.unit.c_str(), r.anchor, r.anchor_name.c_str(), r.goal.c_str(), r.goal.empty() ? "" : (r.met ? "yes" : "NO"),
                r.note.c_str());
    all_met = all_met && r.met;
  }
  if (!json_path.empty()) {
    Json out{{"rows", Json::array()}};
    for (const Row& r : rows)
      out["rows"].push_back(Json{{"section", r.section},
                                 {"name", r.name},
                                 {"value", r.value},
                                 {"unit", r.unit},
                                 {"anchor", r.anchor},
                                 {"anchor_name", r.anchor_name},
                                 {"goal", r.goal},
                                 {"met", r.met},
                                 {"note", r.note}});
    std::ofstream(json_path) << json_text(out, 1) << "\n";
  }
  std::fprintf(stderr, "lockstep-bench: %zu figures, %s\n", rows.size(), all_met ? "every goal met" : "some goals missed");
  return g_section_failed ? 1 : 0;
}
