// The math section: each function of lockstep/detmath.h against glibc's float function of the same
// name on the same inputs, in one run (ns per call, medians of repetitions). The goal is within 2x
// of glibc's: a game pays for identical bits on every machine, not much more.
#include <cmath>
#include <random>

#include "bench.hpp"
#include "lockstep/detmath.h"

namespace lockstep::bench {

namespace {

struct Pair {
  const char* name;
  float (*ours)(float);
  float (*glibc)(float);
  float lo, hi;  // the inputs: uniform in [lo, hi), what a game passes
};

float glibc_sin(float x) { return ::sinf(x); }
float glibc_cos(float x) { return ::cosf(x); }
float glibc_tan(float x) { return ::tanf(x); }
float glibc_asin(float x) { return ::asinf(x); }
float glibc_acos(float x) { return ::acosf(x); }
float glibc_atan(float x) { return ::atanf(x); }
float glibc_exp(float x) { return ::expf(x); }
float glibc_exp2(float x) { return ::exp2f(x); }
float glibc_log(float x) { return ::logf(x); }
float glibc_log2(float x) { return ::log2f(x); }

}  // namespace

void run_math(const Options& opt, std::vector<Row>& rows) {
  const Pair pairs[] = {{"sin", lockstep_sinf, glibc_sin, -100.0f, 100.0f},  {"cos", lockstep_cosf, glibc_cos, -100.0f, 100.0f},
                        {"tan", lockstep_tanf, glibc_tan, -1.5f, 1.5f},       {"asin", lockstep_asinf, glibc_asin, -1.0f, 1.0f},
                        {"acos", lockstep_acosf, glibc_acos, -1.0f, 1.0f},    {"atan", lockstep_atanf, glibc_atan, -20.0f, 20.0f},
                        {"exp", lockstep_expf, glibc_exp, -20.0f, 20.0f},     {"exp2", lockstep_exp2f, glibc_exp2, -20.0f, 20.0f},
                        {"log", lockstep_logf, glibc_log, 0.001f, 1000.0f},  {"log2", lockstep_log2f, glibc_log2, 0.001f, 1000.0f}};
  const std::size_t n = opt.quick ? 1024 : 65536;
  for (const Pair& p : pairs) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> in(p.lo, p.hi);
    std::vector<float> xs(n);
    for (float& x : xs) x = in(rng);
    volatile float sink = 0;
    auto time = [&](float (*f)(float)) {
      return median_ns(opt.repetitions, [&] {
               float s = 0;
               for (const float x : xs) s += f(x);
               sink = s;
             }) /
             static_cast<double>(n);
    };
    // Side by side, alternating, so that both see the same machine.
    const double ours = time(p.ours), glibc = time(p.glibc);
    const double ours2 = time(p.ours), glibc2 = time(p.glibc);
    const double o = std::min(ours, ours2), g = std::min(glibc, glibc2);
    (void)sink;
    Row r;
    r.section = "math";
    r.name = std::string(p.name) + "f ns/call (correctly rounded)";
    r.value = o;
    r.unit = "ns";
    r.anchor = g;
    r.anchor_name = std::string("glibc ") + p.name + "f";
    r.goal = "<= 2x";
    r.met = o <= 2 * g;
    char note[64];
    std::snprintf(note, sizeof note, "%.2fx glibc's", o / g);
    r.note = note;
    rows.push_back(r);
  }
}

}  // namespace lockstep::bench
