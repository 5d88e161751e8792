// lockstep-bench: figures printed as medians of repetitions, each row beside its anchor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/json.hpp"

namespace lockstep::bench {

/// One row of the report.
struct Row {
  std::string section;   ///< e.g. "sim"
  std::string name;      ///< what was measured
  double value = 0;      ///< ours
  std::string unit;
  double anchor = 0;     ///< the figure it is compared with (0: none)
  std::string anchor_name;
  std::string goal;      ///< the goal in words, e.g. "<= 2x"
  bool met = true;
  std::string note;      ///< more figures in words
};

struct Options {
  int repetitions = 7;
  bool quick = false;  ///< a smoke run: tiny sizes, one repetition, seconds in all
  std::string svg_path;          ///< where the pacer section writes its lateness plot ("" = none)
  std::string latency_svg_path;  ///< where the latency section writes its plot ("" = none)
  std::string wire_svg_path;     ///< where the net section writes its bytes-per-player plot ("" = none)
  std::vector<std::uint32_t> sessions;  ///< server section: session counts ({} = the default ladder)
  std::string baseline_bin;  ///< seal section: another build's bin directory, run side by side ("" = none)
};

/// Set by a section whose processes failed (not by a missed goal): lockstep-bench then exits 1.
inline bool g_section_failed = false;

/// Median wall time in nanoseconds of `reps` calls of `fn`, after one warm-up call.
double median_ns(int reps, const std::function<void()>& fn);

void run_sim(const Options& opt, std::vector<Row>& rows);
void run_math(const Options& opt, std::vector<Row>& rows);
void run_pacer(const Options& opt, std::vector<Row>& rows);
void run_net(const Options& opt, std::vector<Row>& rows);
void run_replay(const Options& opt, std::vector<Row>& rows);
void run_server(const Options& opt, std::vector<Row>& rows);
void run_seal(const Options& opt, std::vector<Row>& rows);
void run_metrics(const Options& opt, std::vector<Row>& rows);
void run_latency(const Options& opt, std::vector<Row>& rows);
void run_web(const Options& opt, std::vector<Row>& rows);

/// The number at JSON pointer `pointer` ("/lateness_us/p99") in a JSON document; 0 when the
/// text is not JSON or holds no number there.
double json_number(const std::string& text, const std::string& pointer);
/// Starts `argv` with its affinity set to `cpu` (-1: any), stdout and stderr to `log`.
int spawn(const std::vector<std::string>& argv, int cpu, const std::string& log);

}  // namespace lockstep::bench
