// lockstep-detmath64-check: measures lockstep's binary64 math (lockstep/detmath.h, lockstep_sin
// and the rest without the f) against MPFR: each result's distance from the exact value in ulps of
// the correctly rounded double, the largest over a random sample, the special values and the known
// hard cases (inputs whose exact results lie closest to a rounding boundary), and how many results
// are not the correctly rounded double.
//
//   lockstep-detmath64-check --sample N [--seed S] [--threads T] [--only sin,pow] [--json FILE]
//
// Each function gets N inputs of random bit patterns and N of the moderate values games pass
// (angles within 1e6, exp's range, operands near 1 for log and pow, ...). Exit 1 when any result
// is 1 ulp or more from the exact value, or an exact function (sqrt, fmod, floor, ceil, round,
// trunc, fmin, fmax) is not exact, or a special value is not C99 Annex F's.
#include <mpfr.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/detmath.h"

namespace {

std::uint64_t bits(double d) { return __builtin_bit_cast(std::uint64_t, d); }
double from_bits(std::uint64_t u) { return __builtin_bit_cast(double, u); }

using Fn1 = double (*)(double);
using Fn2 = double (*)(double, double);
using Mpfr1 = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
using Mpfr2 = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);

double sin_of_sincos(double x) {
  double s, c;
  lockstep_sincos(x, &s, &c);
  return s;
}
double cos_of_sincos(double x) {
  double s, c;
  lockstep_sincos(x, &s, &c);
  return c;
}
int mpfr_fmin_ordered(mpfr_ptr y, mpfr_srcptr a, mpfr_srcptr b, mpfr_rnd_t r) { return mpfr_min(y, a, b, r); }
int mpfr_fmax_ordered(mpfr_ptr y, mpfr_srcptr a, mpfr_srcptr b, mpfr_rnd_t r) { return mpfr_max(y, a, b, r); }

/// Where a function's moderate inputs come from.
enum class Range { Angle, Unit, Any, Exp, Exp2, Positive, Integerish };

struct One {
  const char* name;
  Fn1 ours;
  Mpfr1 mpfr;
  Range range;
  bool exact;
};
struct Two {
  const char* name;
  Fn2 ours;
  Mpfr2 mpfr;
  bool exact;
};

const One kOnes[] = {
    {"sin", lockstep_sin, mpfr_sin, Range::Angle, false},       {"cos", lockstep_cos, mpfr_cos, Range::Angle, false},
    {"sincos.sin", sin_of_sincos, mpfr_sin, Range::Angle, false}, {"sincos.cos", cos_of_sincos, mpfr_cos, Range::Angle, false},
    {"tan", lockstep_tan, mpfr_tan, Range::Angle, false},       {"asin", lockstep_asin, mpfr_asin, Range::Unit, false},
    {"acos", lockstep_acos, mpfr_acos, Range::Unit, false},     {"atan", lockstep_atan, mpfr_atan, Range::Any, false},
    {"exp", lockstep_exp, mpfr_exp, Range::Exp, false},         {"exp2", lockstep_exp2, mpfr_exp2, Range::Exp2, false},
    {"log", lockstep_log, mpfr_log, Range::Positive, false},    {"log2", lockstep_log2, mpfr_log2, Range::Positive, false},
    {"sqrt", lockstep_sqrt, mpfr_sqrt, Range::Positive, true},  {"floor", lockstep_floor, mpfr_rint_floor, Range::Integerish, true},
    {"ceil", lockstep_ceil, mpfr_rint_ceil, Range::Integerish, true}, {"round", lockstep_round, mpfr_rint_round, Range::Integerish, true},
    {"trunc", lockstep_trunc, mpfr_rint_trunc, Range::Integerish, true},
};
const Two kTwos[] = {
    {"atan2", lockstep_atan2, mpfr_atan2, false}, {"pow", lockstep_pow, mpfr_pow, false},
    {"hypot", lockstep_hypot, mpfr_hypot, false}, {"fmod", lockstep_fmod, mpfr_fmod, true},
    {"fmin", lockstep_fmin, mpfr_fmin_ordered, true}, {"fmax", lockstep_fmax, mpfr_fmax_ordered, true},
};

/// MPFR's exact value (256 bits) and its correctly rounded double.
struct Reference {
  mpfr_t a, b, exact, rounded, diff;
  Reference() {
    mpfr_inits2(256, a, b, exact, diff, static_cast<mpfr_ptr>(nullptr));
    mpfr_init2(rounded, 53);
  }
  ~Reference() { mpfr_clears(a, b, exact, rounded, diff, static_cast<mpfr_ptr>(nullptr)); }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  /// The error of `ours` in ulps of the correctly rounded result (0 when they are the same bits).
  double error(double ours) {
    // The double MPFR rounds the exact value to, with the double's exponent range and subnormals.
    mpfr_set_emin(-1073);
    mpfr_set_emax(1024);
    int inex = mpfr_set(rounded, exact, MPFR_RNDN);
    inex = mpfr_check_range(rounded, inex, MPFR_RNDN);
    mpfr_subnormalize(rounded, inex, MPFR_RNDN);
    const double ref = mpfr_get_d(rounded, MPFR_RNDN);
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    if (bits(ours) == bits(ref) || (std::isnan(ours) && std::isnan(ref))) return 0.0;
    if (std::isnan(ours) || std::isnan(ref) || std::isinf(ours) || std::isinf(ref)) return 1e300;
    // ulp(ref): 2^(e - 52) for ref in [2^e, 2^(e+1)), at least the subnormals' 2^-1074.
    int e = 0;
    std::frexp(ref == 0.0 ? 0x1p-1022 : ref, &e);
    const int ulp_exp = std::max(e - 1 - 52, -1074);
    mpfr_set_d(diff, ours, MPFR_RNDN);
    mpfr_sub(diff, diff, exact, MPFR_RNDN);
    mpfr_abs(diff, diff, MPFR_RNDN);
    mpfr_mul_2si(diff, diff, -ulp_exp, MPFR_RNDN);
    const double err = mpfr_get_d(diff, MPFR_RNDN);
    return err == 0.0 ? 1e300 : err;  // other bits at no distance: a zero of the wrong sign
  }
  double one(Mpfr1 f, double x, double ours) {
    mpfr_set_d(a, x, MPFR_RNDN);
    f(exact, a, MPFR_RNDN);
    return error(ours);
  }
  double two(Mpfr2 f, double x, double y, double ours) {
    mpfr_set_d(a, x, MPFR_RNDN);
    mpfr_set_d(b, y, MPFR_RNDN);
    f(exact, a, b, MPFR_RNDN);
    return error(ours);
  }
};

struct Tally {
  std::uint64_t checked = 0, wrong = 0;
  double max_ulps = 0.0;
  double worst_x = 0.0, worst_y = 0.0;
  void add(double err, double x, double y = 0.0) {
    ++checked;
    if (err == 0.0) return;
    ++wrong;
    if (err > max_ulps) {
      max_ulps = err;
      worst_x = x;
      worst_y = y;
    }
  }
  void merge(const Tally& o) {
    checked += o.checked;
    wrong += o.wrong;
    if (o.max_ulps > max_ulps) {
      max_ulps = o.max_ulps;
      worst_x = o.worst_x;
      worst_y = o.worst_y;
    }
  }
};

const double kSpecials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, INFINITY, -INFINITY, NAN, 0x1p-1074, -0x1p-1074,
                            0x1p-1022, 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 3.141592653589793, 1.5707963267948966,
                            0.7853981633974483, 709.782712893384, -745.1332191019411, 1024.0, -1075.0, 1e-300, 1e300,
                            0x1p-26, 0x1p-27, 0x1p-54, 1.0000000000000002, 0.9999999999999999};

/// The known hard cases: inputs whose exact results lie closest to a rounding boundary. exp's is
/// Lefevre and Muller's worst case for correct rounding (the exact value has 57 equal bits after
/// the double's 53); the others are the midpoints small arguments make (1 + x with x an odd
/// multiple of 2^-53 is a boundary, and the next term shifts it by x^2/2), and each function's
/// neighbourhood of pi/2's multiples, where reduction loses the most bits.
std::vector<double> hard_cases(const char* name) {
  std::vector<double> v;
  const std::string n(name);
  if (n == "exp") v = {7.5417527749959590085206221e-10, 0x1p-53, 3 * 0x1p-53, -0x1p-54, 0x1.8p-53};
  if (n == "exp2") v = {0x1p-53, 0x1.8p-52, -0x1p-54};
  if (n == "log" || n == "log2") v = {1.0 + 0x1p-52, 1.0 - 0x1p-53, 1.0 + 0x1p-51, 1.0 + 3 * 0x1p-52};
  if (n.rfind("sin", 0) == 0 || n.rfind("cos", 0) == 0 || n == "tan")
    v = {0x1.921fb54442d18p+0, 0x1.921fb54442d18p+1, 0x1.921fb54442d18p+2, 0x1.921fb54442d19p+3, 0x1p-26 * 1.5, 355.0,
         103993.0, 6381956970095103.0 * 0x1p797, 0x1.fffffffffffffp1023, 1e22};
  if (n == "asin" || n == "acos") v = {0x1.fffffffffffffp-1, -0x1.fffffffffffffp-1, 0x1p-26, 0.5, -0.5};
  if (n == "atan") v = {0x1p-27 * 1.5, 1.0, 0x1p60, 0x1.fffffffffffffp59};
  return v;
}

double moderate(Range r, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double u = unit(rng), s = (rng() & 1) ? -1.0 : 1.0;
  switch (r) {
    case Range::Angle: return rng() % 4 ? s * u * 8.0 : s * u * 1e6;
    case Range::Unit: return s * u;
    case Range::Any: return s * std::ldexp(u, static_cast<int>(rng() % 40) - 20);
    case Range::Exp: return -745.0 + u * 1455.0;
    case Range::Exp2: return -1075.0 + u * 2099.0;
    case Range::Positive: return rng() % 2 ? 1.0 + s * std::ldexp(u, -static_cast<int>(rng() % 50)) : std::ldexp(u, static_cast<int>(rng() % 200) - 100);
    case Range::Integerish: return s * std::ldexp(std::floor(u * 64.0) / 2.0, static_cast<int>(rng() % 60));
  }
  return u;
}

struct Row {
  std::string name;
  Tally tally;
  double seconds;
  bool exact;
};

bool wanted(const std::string& only, const char* name) {
  if (only.empty()) return true;
  const std::string list = "," + only + ",", n(name);
  return list.find("," + n + ",") != std::string::npos || list.find("," + n.substr(0, n.find('.')) + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t samples = 0, seed = 1;
  std::string only, json_path;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "lockstep-detmath64-check: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sample") samples = std::stoull(value());
    else if (a == "--seed") seed = std::stoull(value());
    else if (a == "--only") only = value();
    else if (a == "--threads") threads = std::max(1, std::stoi(value()));
    else if (a == "--json") json_path = value();
    else {
      std::fprintf(stderr, "usage: lockstep-detmath64-check --sample N [--seed S] [--threads T] [--only f,g] [--json FILE]\n");
      return 2;
    }
  }
  if (samples == 0) {
    std::fprintf(stderr, "lockstep-detmath64-check: say --sample N\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  std::vector<Row> rows;
  bool ok = true;
  // Each thread takes its share of the sample with its own generator; the result does not depend
  // on the thread count's timing, only on the seed and the count.
  auto run = [&](const char* name, bool exact, auto&& check_one) {
    const auto t0 = Clock::now();
    Tally total;
    std::mutex mu;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        Tally mine;
        {
          Reference ref;
          std::mt19937_64 rng(seed * 1000003 + static_cast<std::uint64_t>(t));
          const std::uint64_t n = samples / static_cast<std::uint64_t>(threads) + (static_cast<std::uint64_t>(t) < samples % static_cast<std::uint64_t>(threads) ? 1 : 0);
          check_one(ref, mine, rng, n, t == 0);
        }
        mpfr_free_cache();  // MPFR keeps its constants (pi, log 2) per thread until told
        std::lock_guard lock(mu);
        total.merge(mine);
      });
    for (auto& th : pool) th.join();
    const Row r{name, total, std::chrono::duration<double>(Clock::now() - t0).count(), exact};
    std::printf("%-11s %10" PRIu64 " inputs  %8" PRIu64 " not correctly rounded  max %.4f ulp  %6.1f s", name, total.checked,
                total.wrong, total.max_ulps > 1e200 ? INFINITY : total.max_ulps, r.seconds);
    if (total.wrong) std::printf("  worst at %a%s%a", total.worst_x, "", total.worst_y);
    std::printf("\n");
    std::fflush(stdout);
    ok = ok && total.max_ulps < 1.0 && (!exact || total.wrong == 0);
    rows.push_back(r);
  };
  for (const One& f : kOnes) {
    if (!wanted(only, f.name)) continue;
    run(f.name, f.exact, [&](Reference& ref, Tally& t, std::mt19937_64& rng, std::uint64_t n, bool first) {
      auto check = [&](double x) { t.add(ref.one(f.mpfr, x, f.ours(x)), x); };
      if (first) {
        for (const double x : kSpecials) check(x);
        for (const double x : hard_cases(f.name)) {
          check(x);
          check(-x);
        }
      }
      for (std::uint64_t i = 0; i < n; ++i) {
        check(from_bits(rng()));
        check(moderate(f.range, rng));
      }
    });
  }
  for (const Two& f : kTwos) {
    if (!wanted(only, f.name)) continue;
    run(f.name, f.exact, [&](Reference& ref, Tally& t, std::mt19937_64& rng, std::uint64_t n, bool first) {
      auto check = [&](double x, double y) { t.add(ref.two(f.mpfr, x, y, f.ours(x, y)), x, y); };
      if (first)
        for (const double x : kSpecials)
          for (const double y : kSpecials) check(x, y);
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      for (std::uint64_t i = 0; i < n; ++i) {
        check(from_bits(rng()), from_bits(rng()));
        // Moderate operands: pow's results in range (and bases near 1 with large exponents),
        // atan2's and hypot's of comparable size.
        const double x = std::ldexp(0.5 + unit(rng), static_cast<int>(rng() % 32) - 16);
        const double y = (unit(rng) - 0.5) * (rng() % 2 ? 100.0 : 4.0);
        check(x, y);
        check(1.0 + (unit(rng) - 0.5) * 0x1p-20, (unit(rng) - 0.5) * 1e8);
      }
    });
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\"samples\": " << samples << ", \"functions\": [";
    for (std::size_t i = 0; i < rows.size(); ++i)
      out << (i ? ", " : "") << "{\"name\": \"" << rows[i].name << "\", \"inputs\": " << rows[i].tally.checked
          << ", \"not_correctly_rounded\": " << rows[i].tally.wrong << ", \"max_ulps\": " << std::min(rows[i].tally.max_ulps, 1e300)
          << ", \"seconds\": " << rows[i].seconds << ", \"exact\": " << (rows[i].exact ? "true" : "false") << "}";
    out << "]}\n";
  }
  std::printf("%s\n", ok ? "PASS: every binary64 function within 1 ulp, the exact ones exact" : "FAIL");
  return ok ? 0 : 1;
}
