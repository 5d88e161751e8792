// lockstep's math (lockstep/detmath.h): the special values of C99 Annex F, exact results, and
// agreement with glibc's binary64 functions rounded once wherever that rounding is sure. (The
// check against MPFR is lockstep-detmath-check: detmath/sampled here, --exhaustive by hand.)
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "lockstep/detmath.h"

namespace {

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }
bool same(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

/// glibc's binary64 f(x) rounded to binary32, when no value within 2^-50 of it rounds otherwise.
bool sure_reference(double d, float* out) {
  if (!std::isfinite(d) || d == 0.0) return false;
  const double e = std::fabs(d) * 0x1p-50;
  *out = static_cast<float>(d);
  return static_cast<float>(d - e) == *out && static_cast<float>(d + e) == *out;
}

}  // namespace

TEST_SUITE("core/detmath") {
  TEST_CASE("special values follow C99 Annex F") {
    const float inf = INFINITY, nan = NAN;
    CHECK(same(lockstep_sinf(-0.0f), -0.0f));
    CHECK(same(lockstep_tanf(-0.0f), -0.0f));
    CHECK(same(lockstep_atanf(-0.0f), -0.0f));
    CHECK(same(lockstep_asinf(-0.0f), -0.0f));
    CHECK(std::isnan(lockstep_sinf(inf)));
    CHECK(std::isnan(lockstep_cosf(-inf)));
    CHECK(std::isnan(lockstep_tanf(nan)));
    CHECK(std::isnan(lockstep_asinf(1.0000001f)));
    CHECK(std::isnan(lockstep_acosf(-1.0000001f)));
    CHECK(same(lockstep_acosf(1.0f), 0.0f));
    CHECK(same(lockstep_expf(-inf), 0.0f));
    CHECK(same(lockstep_expf(inf), inf));
    CHECK(same(lockstep_expf(89.0f), inf));
    CHECK(same(lockstep_exp2f(-151.0f), 0.0f));
    CHECK(same(lockstep_exp2f(-149.0f), 0x1p-149f));
    CHECK(same(lockstep_logf(0.0f), -inf));
    CHECK(same(lockstep_logf(-0.0f), -inf));
    CHECK(std::isnan(lockstep_logf(-1.0f)));
    CHECK(same(lockstep_logf(inf), inf));
    CHECK(same(lockstep_logf(1.0f), 0.0f));
    CHECK(same(lockstep_log2f(0x1p-149f), -149.0f));
    CHECK(same(lockstep_atan2f(-0.0f, -1.0f), -lockstep_atan2f(0.0f, -1.0f)));
    CHECK(same(lockstep_atan2f(0.0f, -0.0f), lockstep_atan2f(0.0f, -1.0f)));
    CHECK(same(lockstep_atan2f(-0.0f, 0.0f), -0.0f));
    CHECK(same(lockstep_powf(nan, 0.0f), 1.0f));
    CHECK(same(lockstep_powf(1.0f, nan), 1.0f));
    CHECK(same(lockstep_powf(-1.0f, inf), 1.0f));
    CHECK(same(lockstep_powf(-0.0f, -3.0f), -inf));
    CHECK(same(lockstep_powf(-0.0f, 3.0f), -0.0f));
    CHECK(same(lockstep_powf(-0.0f, 2.0f), 0.0f));
    CHECK(same(lockstep_powf(-inf, 3.0f), -inf));
    CHECK(same(lockstep_powf(0.5f, inf), 0.0f));
    CHECK(std::isnan(lockstep_powf(-2.0f, 0.5f)));
    CHECK(same(lockstep_hypotf(inf, nan), inf));
    CHECK(same(lockstep_hypotf(nan, -inf), inf));
    CHECK(std::isnan(lockstep_hypotf(nan, 1.0f)));
    CHECK(std::isnan(lockstep_fmodf(1.0f, 0.0f)));
    CHECK(std::isnan(lockstep_fmodf(inf, 1.0f)));
    CHECK(same(lockstep_fmodf(-0.0f, 1.0f), -0.0f));
    CHECK(same(lockstep_fmodf(3.0f, inf), 3.0f));
    CHECK(same(lockstep_fminf(nan, 2.0f), 2.0f));
    CHECK(same(lockstep_fmaxf(2.0f, nan), 2.0f));
    CHECK(same(lockstep_fminf(0.0f, -0.0f), -0.0f));
    CHECK(same(lockstep_fmaxf(-0.0f, 0.0f), 0.0f));
  }

  TEST_CASE("every NaN result is the one quiet NaN 0x7fc00000, whatever the input NaN") {
    const float payload = from_bits(0x7fa00001u), negative = from_bits(0xffc00000u), inf = INFINITY;
    for (const float r : {lockstep_sinf(inf), lockstep_cosf(-inf), lockstep_tanf(payload), lockstep_sinf(negative),
                          lockstep_asinf(2.0f), lockstep_acosf(negative), lockstep_atanf(payload), lockstep_expf(negative),
                          lockstep_exp2f(payload), lockstep_logf(-1.0f), lockstep_log2f(negative), lockstep_sqrtf(-1.0f),
                          lockstep_sqrtf(negative), lockstep_fmodf(1.0f, 0.0f), lockstep_fmodf(payload, 1.0f),
                          lockstep_floorf(negative), lockstep_ceilf(payload), lockstep_roundf(negative), lockstep_truncf(payload),
                          lockstep_fminf(negative, payload), lockstep_fmaxf(payload, negative), lockstep_atan2f(payload, 1.0f),
                          lockstep_powf(-2.0f, 0.5f), lockstep_powf(negative, 2.0f), lockstep_hypotf(negative, 1.0f)}) {
      CHECK(bits(r) == 0x7fc00000u);
    }
    float s, c;
    lockstep_sincosf(negative, &s, &c);
    CHECK(bits(s) == 0x7fc00000u);
    CHECK(bits(c) == 0x7fc00000u);
    CHECK(same(lockstep_sqrtf(-0.0f), -0.0f));
  }

  TEST_CASE("exact results are exact") {
    CHECK(lockstep_log2f(8.0f) == 3.0f);
    CHECK(lockstep_exp2f(10.0f) == 1024.0f);
    CHECK(lockstep_exp2f(-3.0f) == 0.125f);
    CHECK(lockstep_powf(2.0f, 10.0f) == 1024.0f);
    CHECK(lockstep_powf(-3.0f, 3.0f) == -27.0f);
    CHECK(lockstep_powf(9.0f, 0.5f) == 3.0f);
    CHECK(lockstep_powf(0.25f, -1.5f) == 8.0f);
    CHECK(lockstep_hypotf(3.0f, 4.0f) == 5.0f);
    CHECK(lockstep_hypotf(-5.0f, 12.0f) == 13.0f);
    CHECK(lockstep_hypotf(0x1p-149f, 0.0f) == 0x1p-149f);
    CHECK(lockstep_hypotf(0x1.fffffep127f, 0x1.fffffep127f) == INFINITY);
    CHECK(lockstep_hypotf(0x1p127f, 0x1p127f) == 0x1.6a09e6p127f);
    CHECK(lockstep_fmodf(5.5f, 2.0f) == 1.5f);
    CHECK(lockstep_fmodf(-5.5f, 2.0f) == -1.5f);
    CHECK(lockstep_fmodf(1e30f, 3.0f) == std::fmod(1e30f, 3.0f));
    CHECK(lockstep_fmodf(0x1p-140f, 0x1p-148f) == 0.0f);
    CHECK(lockstep_fmodf(0x1.8p-140f, 0x1p-141f) == std::fmod(0x1.8p-140f, 0x1p-141f));
    CHECK(lockstep_sqrtf(2.0f) == std::sqrt(2.0f));
    CHECK(lockstep_roundf(2.5f) == 3.0f);
    CHECK(lockstep_roundf(-2.5f) == -3.0f);
    CHECK(lockstep_roundf(0.49999997f) == 0.0f);
    CHECK(lockstep_roundf(0.5f) == 1.0f);
    CHECK(lockstep_roundf(8388607.5f) == 8388608.0f);
    CHECK(same(lockstep_roundf(-0.3f), -0.0f));
    CHECK(lockstep_floorf(-0.5f) == -1.0f);
    CHECK(same(lockstep_floorf(-0.0f), -0.0f));
    CHECK(same(lockstep_ceilf(-0.5f), -0.0f));
    CHECK(lockstep_ceilf(1.25f) == 2.0f);
    CHECK(lockstep_truncf(-1.75f) == -1.0f);
    CHECK(lockstep_floorf(16777215.0f) == 16777215.0f);
  }

  TEST_CASE("agrees with glibc's binary64 functions rounded once, wherever that rounding is sure") {
    struct F {
      const char* name;
      float (*ours)(float);
      double (*ref)(double);
      float lo, hi;  // the range of the uniform sample (a second sample takes random bits)
    };
    const F fs[] = {{"sin", lockstep_sinf, ::sin, -100.0f, 100.0f},   {"cos", lockstep_cosf, ::cos, -100.0f, 100.0f},
                    {"tan", lockstep_tanf, ::tan, -10.0f, 10.0f},     {"asin", lockstep_asinf, ::asin, -1.0f, 1.0f},
                    {"acos", lockstep_acosf, ::acos, -1.0f, 1.0f},    {"atan", lockstep_atanf, ::atan, -40.0f, 40.0f},
                    {"exp", lockstep_expf, ::exp, -100.0f, 88.0f},    {"exp2", lockstep_exp2f, ::exp2, -149.0f, 127.0f},
                    {"log", lockstep_logf, ::log, 0.0f, 1000.0f},     {"log2", lockstep_log2f, ::log2, 0.0f, 1000.0f}};
    std::mt19937 rng(7);
    for (const F& f : fs) {
      CAPTURE(f.name);
      std::uniform_real_distribution<float> in(f.lo, f.hi);
      int checked = 0;
      for (int i = 0; i < 40000; ++i) {
        const float x = i % 2 ? in(rng) : from_bits(static_cast<std::uint32_t>(rng()));
        float want;
        if (!sure_reference(f.ref(x), &want)) continue;
        ++checked;
        if (!same(f.ours(x), want)) {
          CAPTURE(x);
          CHECK(bits(f.ours(x)) == bits(want));
        }
      }
      CHECK(checked > 15000);
    }
    // Huge arguments are reduced exactly: glibc's binary64 sin of a float is correct there too.
    for (const float x : {1e10f, 3.4e38f, 0x1.921fb6p+0f, 1.5707963e+15f, 7.2e27f}) {
      float want;
      if (sure_reference(::sin(x), &want)) CHECK(bits(lockstep_sinf(x)) == bits(want));
      if (sure_reference(::cos(x), &want)) CHECK(bits(lockstep_cosf(x)) == bits(want));
    }
  }

  TEST_CASE("sincos gives sin's and cos's results") {
    std::mt19937 rng(3);
    for (int i = 0; i < 20000; ++i) {
      const float x = from_bits(static_cast<std::uint32_t>(rng()));
      float s, c;
      lockstep_sincosf(x, &s, &c);
      CHECK(same(s, lockstep_sinf(x)));
      CHECK(same(c, lockstep_cosf(x)));
    }
  }
}

// The binary64 functions: the special values, the one NaN, exact results, and glibc's double
// functions within 1 ulp on moderate inputs (lockstep-detmath64-check measures the error against
// MPFR: detmath/binary64).
namespace {
std::uint64_t dbits(double d) { return std::bit_cast<std::uint64_t>(d); }
bool dsame(double a, double b) { return dbits(a) == dbits(b); }
/// |a - b| in binary64 ulps (as ordered integers).
std::uint64_t dulps(double a, double b) {
  auto ordered = [](double v) {
    const auto u = static_cast<std::int64_t>(dbits(v));
    return u < 0 ? -(u & 0x7fffffffffffffff) : u;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}
}  // namespace

TEST_SUITE("core/detmath") {
  TEST_CASE("binary64: special values follow C99 Annex F") {
    const double inf = INFINITY, nan = NAN;
    CHECK(dsame(lockstep_sin(-0.0), -0.0));
    CHECK(dsame(lockstep_tan(-0.0), -0.0));
    CHECK(dsame(lockstep_atan(-0.0), -0.0));
    CHECK(dsame(lockstep_asin(-0.0), -0.0));
    CHECK(dsame(lockstep_cos(-0.0), 1.0));
    CHECK(dsame(lockstep_log(-0.0), -inf));
    CHECK(dsame(lockstep_log2(0.0), -inf));
    CHECK(dsame(lockstep_log(inf), inf));
    CHECK(dsame(lockstep_exp(-inf), 0.0));
    CHECK(dsame(lockstep_exp(inf), inf));
    CHECK(dsame(lockstep_exp2(-inf), 0.0));
    CHECK(dsame(lockstep_exp(710.0), inf));
    CHECK(dsame(lockstep_exp(-746.0), 0.0));
    CHECK(dsame(lockstep_pow(nan, 0.0), 1.0));
    CHECK(dsame(lockstep_pow(1.0, nan), 1.0));
    CHECK(dsame(lockstep_pow(-1.0, inf), 1.0));
    CHECK(dsame(lockstep_pow(-0.0, -3.0), -inf));
    CHECK(dsame(lockstep_pow(-0.0, 3.0), -0.0));
    CHECK(dsame(lockstep_pow(-0.0, 2.0), 0.0));
    CHECK(dsame(lockstep_pow(-inf, -3.0), -0.0));
    CHECK(dsame(lockstep_pow(-inf, 3.0), -inf));
    CHECK(dsame(lockstep_pow(0.5, -inf), inf));
    CHECK(dsame(lockstep_pow(2.0, -inf), 0.0));
    CHECK(dsame(lockstep_pow(-1.0, 1e300), 1.0));
    CHECK(dsame(lockstep_pow(-2.0, 3.0), -8.0));
    CHECK(dsame(lockstep_atan2(0.0, -0.0), lockstep_atan2(0.0, -1.0)));
    CHECK(dsame(lockstep_atan2(-0.0, 0.0), -0.0));
    CHECK(dsame(lockstep_atan2(inf, -inf), 0x1.2d97c7f3321d2p+1));  // 3 pi / 4
    CHECK(dsame(lockstep_hypot(inf, nan), inf));
    CHECK(dsame(lockstep_hypot(nan, -inf), inf));
    CHECK(dsame(lockstep_fmin(-0.0, 0.0), -0.0));
    CHECK(dsame(lockstep_fmax(-0.0, 0.0), 0.0));
    CHECK(dsame(lockstep_fmin(nan, 2.0), 2.0));
    CHECK(dsame(lockstep_ceil(-0.5), -0.0));
    CHECK(dsame(lockstep_round(-2.5), -3.0));
    CHECK(dsame(lockstep_round(0.49999999999999994), 0.0));
    CHECK(dsame(lockstep_fmod(-7.5, 2.0), -1.5));
    CHECK(dsame(lockstep_fmod(-4.0, 2.0), -0.0));
    CHECK(dsame(lockstep_fmod(0x1p1000, 3.0), std::fmod(0x1p1000, 3.0)));
    CHECK(dsame(lockstep_fmod(0x1p-1070, 0x1p-1073 * 3), std::fmod(0x1p-1070, 0x1p-1073 * 3)));
  }

  TEST_CASE("binary64: every NaN result is the one quiet NaN 0x7ff8000000000000") {
    const double nans[] = {NAN, -NAN, std::bit_cast<double>(std::uint64_t{0x7ff0000000000001}),
                           std::bit_cast<double>(std::uint64_t{0xfff8dead00000000})};
    for (const double n : nans) {
      CHECK(dbits(lockstep_sin(n)) == 0x7ff8000000000000u);
      CHECK(dbits(lockstep_log(n)) == 0x7ff8000000000000u);
      CHECK(dbits(lockstep_pow(n, 2.0)) == 0x7ff8000000000000u);
      CHECK(dbits(lockstep_atan2(n, 1.0)) == 0x7ff8000000000000u);
      CHECK(dbits(lockstep_fmod(n, 1.0)) == 0x7ff8000000000000u);
    }
    CHECK(dbits(lockstep_sin(INFINITY)) == 0x7ff8000000000000u);
    CHECK(dbits(lockstep_log(-1.0)) == 0x7ff8000000000000u);
    CHECK(dbits(lockstep_asin(1.5)) == 0x7ff8000000000000u);
    CHECK(dbits(lockstep_pow(-2.0, 0.5)) == 0x7ff8000000000000u);
    CHECK(dbits(lockstep_sqrt(-1.0)) == 0x7ff8000000000000u);
  }

  TEST_CASE("binary64: exact results are exact") {
    for (int k = -1074; k <= 1023; k += 7) {
      CHECK(lockstep_exp2(k) == std::ldexp(1.0, k));
      CHECK(lockstep_log2(std::ldexp(1.0, k)) == k);
    }
    CHECK(lockstep_pow(2.0, 10.0) == 1024.0);
    CHECK(lockstep_pow(3.0, 3.0) == 27.0);
    CHECK(lockstep_pow(10.0, 15.0) == 1e15);
    CHECK(lockstep_hypot(3.0, 4.0) == 5.0);
    CHECK(lockstep_exp(0.0) == 1.0);
    CHECK(lockstep_log(1.0) == 0.0);
    CHECK(lockstep_cos(0.0) == 1.0);
    CHECK(lockstep_acos(1.0) == 0.0);
  }

  TEST_CASE("binary64: within 1 ulp of glibc's double functions on moderate inputs") {
    // glibc's own are within 1 ulp of the exact value too, so two differ by at most 2.
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> angle(-100.0, 100.0), unit(-1.0, 1.0), range(-700.0, 700.0), pos(1e-300, 1e300);
    std::uint64_t worst = 0;
    for (int i = 0; i < 20000; ++i) {
      const double a = angle(rng), u = unit(rng), e = range(rng), p = std::ldexp(1.0 + unit(rng) * 0.5, static_cast<int>(rng() % 2000) - 1000);
      const std::uint64_t d[] = {dulps(lockstep_sin(a), std::sin(a)),     dulps(lockstep_cos(a), std::cos(a)),
                                 dulps(lockstep_tan(a), std::tan(a)),     dulps(lockstep_asin(u), std::asin(u)),
                                 dulps(lockstep_acos(u), std::acos(u)),   dulps(lockstep_atan(a), std::atan(a)),
                                 dulps(lockstep_exp(e), std::exp(e)),     dulps(lockstep_exp2(e), std::exp2(e)),
                                 dulps(lockstep_log(p), std::log(p)),     dulps(lockstep_log2(p), std::log2(p)),
                                 dulps(lockstep_atan2(a, u), std::atan2(a, u)), dulps(lockstep_pow(p, u), std::pow(p, u)),
                                 dulps(lockstep_hypot(a, e), std::hypot(a, e))};
      for (const std::uint64_t v : d) worst = std::max(worst, v);
    }
    CHECK(worst <= 1);
  }
}

TEST_SUITE("core/detmath") {
  TEST_CASE("powf: a result exactly halfway between two floats rounds to even") {
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, halfway between 1 + 2^-11 (even) and the float above.
    CHECK(bits(lockstep_powf(1.000244140625f, 2.0f)) == bits(1.00048828125f));
    // (1 + 3 2^-12)^2 = (2^24 + 3 2^13 + 9) 2^-24: halfway, to the even 8400900 2^-23.
    CHECK(bits(lockstep_powf(1.000732421875f, 2.0f)) == bits(std::ldexp(8400900.0f, -23)));
    // 66049^1.5 = 257^3 = 16974593, halfway between 16974592 (even) and 16974594.
    CHECK(lockstep_powf(66049.0f, 1.5f) == 16974592.0f);
    CHECK(lockstep_powf(-257.0f, 3.0f) == -16974592.0f);
    // Exact results that are floats stay exact.
    CHECK(lockstep_powf(9.0f, 1.5f) == 27.0f);
    CHECK(lockstep_powf(0.25f, -0.5f) == 2.0f);
    CHECK(lockstep_powf(3.0f, 15.0f) == 14348907.0f);
  }
}
