// The math section: each function of lockstep/detmath.h against glibc's function of the same name
// on the same inputs, in one run (ns per call, medians of repetitions): the binary32 functions
// against glibc's float ones, the binary64 functions against glibc's double ones. The goal is
// within 2x of glibc's: a game pays for identical bits on every machine, not much more.
#include <cmath>
#include <random>

#include "bench.hpp"
#include "lockstep/detmath.h"

namespace lockstep::bench {

namespace {

template <typename T>
struct Pair {
  const char* name;
  T (*ours)(T);
  T (*glibc)(T);
  T lo, hi;  // the inputs: uniform in [lo, hi), what a game passes
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
double glibc_sin64(double x) { return ::sin(x); }
double glibc_cos64(double x) { return ::cos(x); }
double glibc_tan64(double x) { return ::tan(x); }
double glibc_asin64(double x) { return ::asin(x); }
double glibc_acos64(double x) { return ::acos(x); }
double glibc_atan64(double x) { return ::atan(x); }
double glibc_exp64(double x) { return ::exp(x); }
double glibc_exp264(double x) { return ::exp2(x); }
double glibc_log64(double x) { return ::log(x); }
double glibc_log264(double x) { return ::log2(x); }
double pow_of_2_5(double x) { return lockstep_pow(x, 2.5); }
double glibc_pow_of_2_5(double x) { return ::pow(x, 2.5); }

template <typename T>
void bench_pairs(const Options& opt, std::vector<Row>& rows, const Pair<T>* pairs, std::size_t count, const char* suffix,
                 const char* quality) {
  const std::size_t n = opt.quick ? 1024 : 65536;
  for (std::size_t i = 0; i < count; ++i) {
    const Pair<T>& p = pairs[i];
    std::mt19937 rng(11);
    std::uniform_real_distribution<T> in(p.lo, p.hi);
    std::vector<T> xs(n);
    for (T& x : xs) x = in(rng);
    volatile T sink = 0;
    auto time = [&](T (*f)(T)) {
      return median_ns(opt.repetitions, [&] {
               T s = 0;
               for (const T x : xs) s += f(x);
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
    r.name = std::string(p.name) + suffix + " ns/call (" + quality + ")";
    r.value = o;
    r.unit = "ns";
    r.anchor = g;
    r.anchor_name = std::string("glibc ") + p.name + suffix;
    r.goal = "<= 2x";
    r.met = o <= 2 * g;
    char note[64];
    std::snprintf(note, sizeof note, "%.2fx glibc's", o / g);
    r.note = note;
    rows.push_back(r);
  }
}

}  // namespace

void run_math(const Options& opt, std::vector<Row>& rows) {
  const Pair<float> singles[] = {
      {"sin", lockstep_sinf, glibc_sin, -100.0f, 100.0f}, {"cos", lockstep_cosf, glibc_cos, -100.0f, 100.0f},
      {"tan", lockstep_tanf, glibc_tan, -1.5f, 1.5f},     {"asin", lockstep_asinf, glibc_asin, -1.0f, 1.0f},
      {"acos", lockstep_acosf, glibc_acos, -1.0f, 1.0f},  {"atan", lockstep_atanf, glibc_atan, -20.0f, 20.0f},
      {"exp", lockstep_expf, glibc_exp, -20.0f, 20.0f},   {"exp2", lockstep_exp2f, glibc_exp2, -20.0f, 20.0f},
      {"log", lockstep_logf, glibc_log, 0.001f, 1000.0f}, {"log2", lockstep_log2f, glibc_log2, 0.001f, 1000.0f}};
  bench_pairs(opt, rows, singles, std::size(singles), "f", "correctly rounded");
  const Pair<double> doubles[] = {
      {"sin", lockstep_sin, glibc_sin64, -100.0, 100.0},  {"cos", lockstep_cos, glibc_cos64, -100.0, 100.0},
      {"tan", lockstep_tan, glibc_tan64, -1.5, 1.5},      {"asin", lockstep_asin, glibc_asin64, -1.0, 1.0},
      {"acos", lockstep_acos, glibc_acos64, -1.0, 1.0},   {"atan", lockstep_atan, glibc_atan64, -20.0, 20.0},
      {"exp", lockstep_exp, glibc_exp64, -20.0, 20.0},    {"exp2", lockstep_exp2, glibc_exp264, -20.0, 20.0},
      {"log", lockstep_log, glibc_log64, 0.001, 1000.0},  {"log2", lockstep_log2, glibc_log264, 0.001, 1000.0},
      {"pow(x,2.5)", pow_of_2_5, glibc_pow_of_2_5, 0.001, 1000.0}};
  bench_pairs(opt, rows, doubles, std::size(doubles), "", "within 1 ulp");
}

}  // namespace lockstep::bench
