// The 100 Hz pacer beside the loops people write: the sleep-the-remainder loop in its common
// form (it measures a frame from the previous frame's end, so it counts its own sleep and runs
// about twice too fast), the same loop corrected (it drifts by each sleep's overshoot), and the
// busy-wait accumulator loop (punctual, and a whole core burned).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/pacer.hpp"
#include "lockstep/rng.hpp"

namespace lockstep::bench {
namespace {

constexpr std::int64_t kPeriod = kTickNs;

std::int64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

void sleep_ns(std::int64_t ns) {
  if (ns <= 0) return;
  const timespec ts = to_timespec(ns);
  nanosleep(&ts, nullptr);
}

// The small fixed amount of work each tick does: about 50 us of arithmetic.
volatile std::uint64_t g_sink = 0;
void work() {
  std::uint64_t x = g_sink;
  for (int i = 0; i < 20000; ++i) x = mix64(x + static_cast<std::uint64_t>(i));
  g_sink = x;
}

struct LoopResult {
  std::string name;
  double cpu_pct = 0;
  double drift_ms = 0;  ///< the last tick's time minus its ideal time (+: behind, -: ahead)
  std::vector<double> lateness_us;  ///< per tick: when it ran minus start + n * period
};

template <class Loop>
LoopResult run_loop(const std::string& name, std::int64_t duration_ns, Loop loop) {
  LoopResult r;
  r.name = name;
  const std::int64_t start = monotonic_ns();
  const std::int64_t cpu0 = thread_cpu_ns();
  std::int64_t ticks = 0;
  auto tick = [&](std::int64_t now) {
    r.lateness_us.push_back(static_cast<double>(now - (start + ticks * kPeriod)) / 1000.0);
    ++ticks;
    work();
  };
  loop(start, start + duration_ns, tick);
  const std::int64_t end = monotonic_ns();
  r.cpu_pct = 100.0 * static_cast<double>(thread_cpu_ns() - cpu0) / static_cast<double>(end - start);
  r.drift_ms = r.lateness_us.empty() ? 0.0 : r.lateness_us.back() / 1000.0;
  return r;
}

std::vector<LoopResult> run_all(std::int64_t duration) {
  std::vector<LoopResult> out;
  // Ours twice: with the learned spin margin (clients, a process alone on its core) and sleeping
  // only (servers, many processes sharing a core).
  for (const bool spin : {true, false}) {
    out.push_back(run_loop(spin ? "lockstep Pacer (spin margin)" : "lockstep Pacer (sleep only, servers)", duration,
                           [spin](std::int64_t start, std::int64_t stop, auto tick) {
                             Pacer pacer(spin ? PacerConfig{} : PacerConfig::sleep_only());
                             pacer.start(start);
                             while (pacer.next_deadline() < stop) {
                               pacer.wait();
                               const std::int64_t now = monotonic_ns();
                               tick(now);
                               pacer.reached(now);
                             }
                           }));
  }
  out.push_back(run_loop("sleep remainder (common)", duration, [](std::int64_t, std::int64_t stop, auto tick) {
    std::int64_t last_end = monotonic_ns();
    for (std::int64_t now = last_end; now < stop; now = monotonic_ns()) {
      tick(now);
      const std::int64_t end = monotonic_ns();
      sleep_ns(kPeriod - (end - last_end));  // measured from the previous frame's end: counts the sleep
      last_end = end;
    }
  }));
  out.push_back(run_loop("sleep remainder (corrected)", duration, [](std::int64_t, std::int64_t stop, auto tick) {
    for (std::int64_t now = monotonic_ns(); now < stop; now = monotonic_ns()) {
      tick(now);
      sleep_ns(kPeriod - (monotonic_ns() - now));  // relative sleep: each overshoot is kept
    }
  }));
  out.push_back(run_loop("busy-wait accumulator", duration, [](std::int64_t start, std::int64_t stop, auto tick) {
    std::int64_t acc = kPeriod, last = start;  // tick 0 is due at the start, as in the other loops
    for (std::int64_t now = start; now < stop; now = monotonic_ns()) {
      acc += now - last;
      last = now;
      while (acc >= kPeriod) {
        acc -= kPeriod;
        tick(now);
      }
    }
  }));
  return out;
}

// Cumulative distributions of |lateness| for the loops, log-scaled, as an SVG.
void write_svg(const std::vector<LoopResult>& loops, const std::string& path) {
  const double w = 720, h = 420, left = 70, right = 20, top = 40, bottom = 60;
  const double lo = 1, hi = 1e5;  // 1 us .. 100 ms
  auto x_of = [&](double us) {
    const double v = std::clamp(us, lo, hi);
    return left + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (w - left - right);
  };
  auto y_of = [&](double frac) { return top + (1.0 - frac) * (h - top - bottom); };
  const char* colors[] = {"#1b9e77", "#66a61e", "#d95f02", "#7570b3", "#e7298a"};
  std::ofstream out(path);
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  out << "<text x='" << w / 2 << "' y='22' text-anchor='middle' font-size='14'>100 Hz loop tick lateness, "
      << "cumulative (|actual - ideal|)</text>\n";
  for (double d = lo; d <= hi; d *= 10) {
    out << "<line x1='" << x_of(d) << "' y1='" << top << "' x2='" << x_of(d) << "' y2='" << h - bottom
        << "' stroke='#ddd'/><text x='" << x_of(d) << "' y='" << h - bottom + 16 << "' text-anchor='middle'>"
        << (d < 1000 ? std::to_string(static_cast<int>(d)) + " us" : std::to_string(static_cast<int>(d / 1000)) + " ms")
        << "</text>\n";
  }
  for (double f : {0.0, 0.5, 0.9, 0.99, 1.0})
    out << "<line x1='" << left << "' y1='" << y_of(f) << "' x2='" << w - right << "' y2='" << y_of(f)
        << "' stroke='#eee'/><text x='" << left - 6 << "' y='" << y_of(f) + 4 << "' text-anchor='end'>" << f << "</text>\n";
  for (std::size_t i = 0; i < loops.size(); ++i) {
    std::vector<double> v;
    for (double l : loops[i].lateness_us) v.push_back(std::fabs(l));
    std::sort(v.begin(), v.end());
    out << "<polyline fill='none' stroke-width='2' stroke='" << colors[i % 5] << "' points='";
    const std::size_t step = std::max<std::size_t>(1, v.size() / 400);
    for (std::size_t k = 0; k < v.size(); k += step)
      out << x_of(v[k]) << "," << y_of(static_cast<double>(k + 1) / static_cast<double>(v.size())) << " ";
    if (!v.empty()) out << x_of(v.back()) << "," << y_of(1.0);
    out << "'/>\n<text x='" << left + 10 << "' y='" << top + 16 + 16 * static_cast<double>(i) << "' fill='" << colors[i % 5]
        << "'>" << loops[i].name << "</text>\n";
  }
  out << "<text x='" << w / 2 << "' y='" << h - 20 << "' text-anchor='middle'>lateness (log scale)</text>\n</svg>\n";
}

}  // namespace

void run_pacer(const Options& opt, std::vector<Row>& rows) {
  const std::int64_t duration = opt.quick ? 500'000'000 : 10'000'000'000;
  const auto loops = run_all(duration);
  if (!opt.svg_path.empty()) write_svg(loops, opt.svg_path);
  const LoopResult& busy = loops.back();
  for (const LoopResult& l : loops) {
    std::vector<double> abs_late;
    for (double v : l.lateness_us) abs_late.push_back(std::fabs(v));
    const double p50 = percentile(abs_late, 50), p99 = percentile(abs_late, 99), mx = percentile(abs_late, 100);
    const bool is_ours = l.name.rfind("lockstep", 0) == 0;
    rows.push_back({"pacer", l.name + ": CPU", l.cpu_pct, "%", busy.cpu_pct, "busy-wait", is_ours ? "<= 2 %" : "",
                    !is_ours || l.cpu_pct <= 2.0, ""});
    rows.push_back({"pacer", l.name + ": drift after " + std::to_string(duration / 1'000'000'000) + " s", l.drift_ms, "ms",
                    0, "", is_ours ? "|x| < 0.5 ms" : "", !is_ours || std::fabs(l.drift_ms) < 0.5, ""});
    std::vector<double> busy_abs;
    for (double v : busy.lateness_us) busy_abs.push_back(std::fabs(v));
    const double busy_p99 = percentile(busy_abs, 99);
    rows.push_back({"pacer", l.name + ": lateness p50/p99/max", p99, "us p99", busy_p99, "busy-wait p99",
                    is_ours ? "<= 1.5x" : "", !is_ours || p99 <= 1.5 * std::max(busy_p99, 1.0),
                    "p50 " + std::to_string(static_cast<int>(p50)) + " us, max " + std::to_string(static_cast<int>(mx)) + " us"});
  }
}

}  // namespace lockstep::bench
