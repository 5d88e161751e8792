// lockstep's math (lockstep/detmath.h): binary32 functions correctly rounded and identical on every
// machine. Each is evaluated in binary64 with +, -, *, / and sqrt only (IEEE-754 rounds them
// exactly the same everywhere), integer arithmetic, and tables compiled in. The result y carries
// a relative error below 2^-50 (Taylor series on short intervals in an order written out,
// arguments reduced exactly or with at most two roundings); round() below returns the float y
// rounds to when every value within 2^-49 |y| of y rounds to it too, which is then the correctly
// rounded result. Otherwise (about one input in 2^22) the exact value may lie on either side of a
// rounding boundary: for one-argument functions the answer is in a table made with MPFR by
// tools/detmath_check.cpp (--table), which also checks every other input against MPFR
// (--exhaustive); atan2 and pow ask a double-double evaluation (detmath_accurate.hpp) and, for
// pow's exact powers, the exact power; hypot decides its boundary cases exactly.
//
// This file must be compiled with -ffp-contract=off and without -ffast-math (the library's
// determinism flags); nothing here calls libm.
#include "lockstep/detmath.h"

#include <cstddef>
#include <cstdint>

#include "detmath_accurate.hpp"
#include "detmath_bits.hpp"

namespace {

using namespace lockstep::detmath_bits;

#include "detmath_constants.inc"
#include "detmath_asin_taylor.inc"
#include "detmath_log_table.inc"

__extension__ typedef unsigned __int128 u128;  // GCC and Clang on every target lockstep builds for
__extension__ typedef __int128 i128;

struct Hard {
  std::uint32_t x, r;  // an input's bits and its correctly rounded result's
};

#include "detmath_hard_cases.inc"

#ifdef LOCKSTEP_DETMATH_PROBE
// tools/detmath_check.cpp: whether the last call fell back on its table or the accurate path, and
// (--hunt) atan2's and pow's results with the accurate path turned off, for comparison.
thread_local bool g_fell_back = false;
thread_local bool g_fast_only = false;
#define LOCKSTEP_FAST_ONLY g_fast_only
#else
#define LOCKSTEP_FAST_ONLY false
#endif
/// A call that could not round its binary64 result sure of it (the probe's count; nothing else).
[[gnu::always_inline]] inline void note_fell_back() {
#ifdef LOCKSTEP_DETMATH_PROBE
  g_fell_back = true;
#endif
}

/// Whether every value within 2^-49 |y| of y rounds to the float y rounds to: then, y being
/// within that of the exact value, the conversion is the correctly rounded result.
[[gnu::always_inline]] inline bool sure(double y) {
  // First in integers, for the common case: y in the range of normal floats, and its 29 bits
  // below a float's precision more than 32 of its own units in the last place from the halfway
  // point. 2^-49 |y| is less than 16 of those units, and the next halfway points are 2^29 units
  // away, so no value within it rounds otherwise (the test below would say the same).
  const std::uint64_t u = bits(y);
  const auto exponent = static_cast<std::uint32_t>((u >> 52) & 0x7ff);
  const std::uint64_t below = u & ((std::uint64_t{1} << 29) - 1);
  if (exponent - (1023 - 126) <= 252 && below - (std::uint64_t{1} << 28) + 32 > 64) return true;
  const float r = static_cast<float>(y);
  const double e = fabs_d(y) * 0x1p-49;
  return static_cast<float>(y - e) == r && static_cast<float>(y + e) == r;
}

/// The float y rounds to, when that is sure to be the exact value's too; else `table`'s entry for x.
template <std::size_t N>
float round(double y, float x, const Hard (&table)[N]) {
  if (sure(y)) return static_cast<float>(y);
  note_fell_back();
  const float r = static_cast<float>(y);
  const std::uint32_t key = bits(x);
  std::size_t lo = 0, hi = N - 1;  // the last entry is a sentinel
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (table[mid].x < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < N - 1 && table[lo].x == key ? from_bits(table[lo].r) : r;
}

/// The float nearest hi + lo (a double-double from detmath_accurate, |lo| <= ulp(hi) / 2, hi in
/// the float range): hi rounds to it unless hi lies exactly halfway between two floats, where the
/// exact value is on lo's side of it (lo = 0: a tie, to even, as the conversion rounds it).
float round_dd(double hi, double lo) {
  const float r = static_cast<float>(hi);
  if (lo == 0.0 || static_cast<double>(r) == hi) return r;
  const std::uint32_t ur = bits(r);
  const bool away = fabs_d(hi) > fabs_d(static_cast<double>(r));  // hi beyond r, from zero
  const float other = from_bits(away ? ur + 1 : ur - 1);          // the float on hi's other side
  if ((static_cast<double>(r) + static_cast<double>(other)) * 0.5 != hi) return r;
  const bool beyond = (lo > 0) == (hi > 0);  // the exact value further from zero than hi
  return beyond == away ? other : r;
}

// Selections without a branch. With arguments a game passes, which of two answers applies (the
// sign of x, the quadrant of an angle, which half of an octave) is as good as random, and a
// mispredicted branch costs more than the arithmetic it skips: both operands are computed and the
// answer picked by a mask. The values are those of the branches they replace, bit for bit.

/// `neg` ? -v : v (a sign flip, exactly as negation).
double negate_if(bool neg, double v) { return from_bits(bits(v) ^ (static_cast<std::uint64_t>(neg) << 63)); }
/// `first` ? a : b.
double pick(bool first, double a, double b) {
  const std::uint64_t m = 0 - static_cast<std::uint64_t>(first);
  return from_bits((bits(a) & m) | (bits(b) & ~m));
}

/// z to the nearest integer, halves away from zero: z + 0.5 or z - 0.5 (z + -0.5, the same
/// operation), truncated; the half takes z's sign instead of a branch.
int round_to_int(double z) {
  return static_cast<int>(z + from_bits(static_cast<std::uint64_t>(bits(0.5) | (bits(z) & 0x8000000000000000ULL))));
}

// --- sin, cos, tan -----------------------------------------------------------------------------

/// |x| reduced modulo pi/2, exactly: |x| = (4n + q) pi/2 + r with |r| <= pi/4, for any finite
/// |x| >= pi/4. |x| * 2/pi is formed in integers from 160 bits of 2/pi (the window that matters
/// for x's exponent), so r keeps more than 60 significant bits however close |x| is to a
/// multiple of pi/2; it is returned rounded once to a double.
double reduce(std::uint32_t ux, int* q) {
  const int ex = static_cast<int>(ux >> 23) - 150;  // |x| = m 2^ex
  const std::uint64_t m = (ux & 0x7fffffu) | 0x800000u;
  // Words of 2/pi before k0 only add multiples of 4 to |x| 2/pi.
  const int k0 = ex >= 34 ? (ex - 34) / 32 + 1 : 0;
  std::uint32_t p[6];  // m times words k0..k0+4, most significant first
  std::uint64_t carry = 0;
  for (int j = 4; j >= 0; --j) {
    const std::uint64_t t = m * kTwoOverPiBits[k0 + j] + carry;
    p[j + 1] = static_cast<std::uint32_t>(t);
    carry = t >> 32;
  }
  p[0] = static_cast<std::uint32_t>(carry);
  // p is the 192-bit product with `sh` bits below its binary point (127 <= sh <= 184); T is its
  // 128 bits from 2 integer bits down, as a fixed-point number of 126 fraction bits.
  const int sh = 32 * (k0 + 5) - ex;
  const u128 hi = (static_cast<u128>((std::uint64_t{p[0]} << 32) | p[1]) << 64) | ((std::uint64_t{p[2]} << 32) | p[3]);
  const std::uint64_t lo = (std::uint64_t{p[4]} << 32) | p[5];
  const int left = 190 - sh;  // 6..63
  const u128 t = (hi << left) | (lo >> (64 - left));
  *q = static_cast<int>(t >> 126) + static_cast<int>((t >> 125) & 1);
  // The fraction as a signed fixed-point number in [-1/2, 1/2), 2^-128 a unit.
  const auto s = static_cast<i128>(t << 2);
  const bool negative = s < 0;
  u128 a = negative ? static_cast<u128>(-s) : static_cast<u128>(s);
  if (a == 0) return 0.0;
  // Normalize: the leading one to bit 127.
  const auto top = static_cast<std::uint64_t>(a >> 64);
  const int shift = top != 0 ? __builtin_clzll(top) : 64 + __builtin_clzll(static_cast<std::uint64_t>(a));
  a <<= shift;
  // The top 64 bits, rounded once to a double, then scaled by 2^-(64 + shift) exactly.
  const double f = static_cast<double>(static_cast<std::uint64_t>(a >> 64)) * pow2(-64 - shift);
  const double r = f * kPiOver2Hi + f * kPiOver2Lo;
  return negate_if(negative, r);
}

/// c[first] - c[first+1] x + c[first+2] x^2 - ... +- c[last] x^(last-first), by Horner from the top
/// (the series below alternate in sign).
double alternating(const double* c, int first, int last, double x) {
  double p = (last - first) % 2 ? -c[last] : c[last];
  for (int k = last - 1; k >= first; --k) p = p * x + ((k - first) % 2 ? -c[k] : c[k]);
  return p;
}

// sin and cos by Estrin's scheme: neighbouring terms paired (a - b x), the pairs joined with x^2
// and x^4. The chain of dependent operations is 4 deep where Horner's is 8; the order is written
// out, so every machine rounds the same operations. On |r| <= pi/4 (x = r^2 <= 0.617) the first
// left-out term is below 2^-58 of the result (sin: r^19/19!, cos: r^18/18!).

double sin_poly(double r) {  // sin(r), |r| <= pi/4: r - r^3 (1/3! - r^2/5! + ... - r^14/17!)
  const double x = r * r, x2 = x * x, x4 = x2 * x2;
  const double* c = kSinC;
  const double p = ((c[0] - c[1] * x) + x2 * (c[2] - c[3] * x)) + x4 * ((c[4] - c[5] * x) + x2 * (c[6] - c[7] * x));
  return r - r * x * p;
}

double cos_poly(double r) {  // cos(r), |r| <= pi/4: 1 - r^2/2 + r^4 (1/4! - r^2/6! + ... + r^12/16!)
  const double x = r * r, x2 = x * x, x4 = x2 * x2;
  const double* c = kCosC;
  const double p = ((c[1] - c[2] * x) + x2 * (c[3] - c[4] * x)) + x4 * ((c[5] - c[6] * x) + x2 * c[7]);
  return (1.0 - x * c[0]) + x2 * p;
}

/// |x| = (4n + q) pi/2 + r: r and q (mod 4).
double reduced(float x, int* q) {
  const std::uint32_t ux = bits(x) & 0x7fffffffu;
  if (ux < 0x3f490fdbu) {  // |x| < pi/4
    *q = 0;
    return static_cast<double>(from_bits(ux));
  }
  if (ux < 0x48000000u) {
    // |x| < 2^17, what games pass: Cody-Waite, k = |x| 2/pi rounded (k < 2^17) and
    // r = ((|x| - k P1) - k P2) - k P3, pi/2 = P1 + P2 + P3 to 2^-125. k P1 and k P2 are exact (36
    // bits each), and so is |x| - k P1 (a multiple of 2^-35 below 1); the two later steps round
    // once each, relative to r. tools/detmath_check holds every such input against MPFR.
    const double a = static_cast<double>(from_bits(ux));
    const int k = round_to_int(a * kTwoOverPi);
    const double kd = k;
    *q = k;
    return ((a - kd * kPiOver2Cw[0]) - kd * kPiOver2Cw[1]) - kd * kPiOver2Cw[2];
  }
  return reduce(ux, q);
}

double sin_of(float x, int q, double r) {  // sin(|x|) from its reduction, signed as x
  const double s = pick((q & 1) != 0, cos_poly(r), sin_poly(r));
  const bool neg = ((q & 2) != 0) != (bits(x) >> 31 != 0);
  return negate_if(neg, s);
}
double cos_of(int q, double r) {
  const double c = pick((q & 1) != 0, sin_poly(r), cos_poly(r));
  return negate_if(((q + 1) & 2) != 0, c);
}

// --- atan, asin, acos --------------------------------------------------------------------------

/// atan(a) for a >= 0 (a may be +inf): a > 1 through pi/2 - atan(1/a); on [0, 1] from the nearest
/// i/16, atan(a) = atan(i/16) + atan(t), t = (a - i/16) / (1 + a i/16), |t| < 1/30.
/// asin t for t in [0, 1/2], within 2^-52 of it: asin's Taylor series about c = i/64, the
/// nearest to t (h = t - c exact, |h| <= 1/128; h^10's term is below 2^-65 of the result), the
/// series in h by Horner's scheme. With `lo`, the value is returned as its leading part (asin c's
/// double) and *lo the rest, which a caller subtracting it from pi/2 adds separately; without,
/// summed.
double asin_near(double t, double* lo) {
  const int i = round_to_int(t * 64.0);
  const double* k = kAsinTaylor[i];
  const double h = t - i * 0.015625;
  // The binary64 functions' table: asin c (k[0] + k[1]), asin'(c) (k[2]; its lo k[3] unused here), h^2 .. h^9.
  const double p = h * (k[2] + h * (k[4] + h * (k[5] + h * (k[6] + h * (k[7] + h * (k[8] + h * (k[9] + h * (k[10] + h * k[11]))))))));
  if (lo) {
    *lo = k[1] + p;
    return k[0];
  }
  return k[0] + (k[1] + p);
}

double atan_pos(double a) {
  const bool inverted = a > 1.0;
  if (inverted) a = 1.0 / a;
  const int i = static_cast<int>(a * 16.0 + 0.5);
  const double c = i * 0.0625;
  const double t = (a - c) / (1.0 + a * c);
  const double t2 = t * t;
  const double at = kAtanTable[i] + (t - t * t2 * alternating(kAtanC, 0, 5, t2));
  return inverted ? (kPiOver2Hi - at) + kPiOver2Lo : at;
}

// --- exp, exp2, log, log2 ----------------------------------------------------------------------

/// e times 2^(k/64): the table's 2^(j/64), j = k mod 64, and an exact power of two (k - j is a
/// multiple of 64, so the shift divides exactly).
[[gnu::always_inline]] inline double times_exp2_64ths(int k, double e) {
  const int j = k & 63;
  return kExp2Table[j] * e * pow2((k - j) >> 6);
}

/// 2^(k/64) e^r for |r| <= ln(2)/128 (a little more is fine), with k in the double's range.
double exp_scaled(int k, double r) {
  double p = kExpC[5];
  p = p * r + kExpC[4];
  p = p * r + kExpC[3];
  p = p * r + kExpC[2];
  p = p * r + kExpC[1];
  p = p * r + kExpC[0];
  return times_exp2_64ths(k, 1.0 + (r + r * r * p));
}

/// exp_scaled() for expf and exp2f: the same 2^(k/64) e^r with a polynomial of degree 5 (the first
/// term left out, r^6/6!, is below 2^-54 of the result for |r| <= ln(2)/128), by Estrin's scheme.
/// powf keeps exp_scaled(): its results stay those it always gave.
[[gnu::always_inline]] inline double exp_scaled_short(int k, double r) {
  const double r2 = r * r;
  const double p = (kExpC[0] + kExpC[1] * r) + r2 * (kExpC[2] + kExpC[3] * r);
  return times_exp2_64ths(k, 1.0 + (r + r2 * p));
}

/// log's and log2's answers for x <= 0, NaN and +inf, in *out; false for the finite x > 0 left.
[[gnu::always_inline]] inline bool log_special(float x, float* out) {
  const std::uint32_t u = bits(x);
  // A positive normal float, the common case, in one test: its bits less 2^23 are below 0x7f000000.
  if (u - 0x00800000u < 0x7f000000u) return false;
  if ((u & 0x7fffffffu) > 0x7f800000u) *out = kNaN;
  else if ((u & 0x7fffffffu) == 0) *out = -kInf;
  else if (u >> 31) *out = kNaN;
  else if (u == 0x7f800000u) *out = x;
  else return false;
  return true;
}

/// log(m) for m in [sqrt(1/2), sqrt(2)]: 2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172.
/// 2/3 + 2/5 s2 + 2/7 s2^2 + ...: 2 atanh(s) = 2s + s^3 log_series(s^2).
double log_series(double s2) {
  double p = kLogC[10];
  for (int k = 9; k >= 0; --k) p = p * s2 + kLogC[k];
  return p;
}

/// x > 0 finite as m 2^e, m in [sqrt(1/2), sqrt(2)).
double split_log(float x, int* e) {
  std::uint32_t u = bits(x);
  int ex = static_cast<int>(u >> 23);
  if (ex == 0) {  // subnormal: normalize
    int shift = 0;
    while (!(u & 0x800000u)) {
      u <<= 1;
      ++shift;
    }
    ex = 1 - shift;
  }
  std::uint32_t mant = u & 0x7fffffu;
  const std::uint32_t halve = mant > 0x3504f3u;  // m > sqrt(2): halve it
  *e = ex - 127 + static_cast<int>(halve);
  mant |= 0x3f800000u - (halve << 23);  // the exponent of [1, 2), or of [1/2, 1) when halved
  return static_cast<double>(from_bits(mant));
}

// --- pow near a rounding boundary ---------------------------------------------------------------

/// Whether a^y is exactly a double, for a float a > 0 and y > 0 (into *out): a = m 2^ea and
/// y = n 2^-k with m and n odd. For m = 1 the result is a power of two, never halfway between two
/// floats, so it is left to the double-double; otherwise a^y is a dyadic rational only when m is
/// a (2^k)-th power and ea a multiple of 2^k, and then it is exact when that root to the n-th
/// power has at most 53 bits. These are the only inputs whose result can lie exactly halfway
/// between two floats, where no approximation decides the rounding.
bool exact_power(float a, float y, double* out) {
  const std::uint32_t ua = bits(a), uy = bits(y);
  if ((ua >> 23) == 0 || (uy >> 23) == 0 || (uy >> 31) != 0) return false;  // subnormal a or y, y < 0
  std::uint32_t m = (ua & 0x7fffffu) | 0x800000u, n = (uy & 0x7fffffu) | 0x800000u;
  int ea = static_cast<int>(ua >> 23) - 150, ey = static_cast<int>(uy >> 23) - 150;
  const int za = __builtin_ctz(m), zy = __builtin_ctz(n);
  m >>= za;
  ea += za;
  n >>= zy;
  ey += zy;
  if (m == 1) return false;
  std::uint64_t root = m;
  if (ey < 0) {  // y = n / 2^k: m must be a (2^k)-th power and ea a multiple of 2^k
    const int k = -ey;
    if (k > 4 || (ea & ((1 << k) - 1)) != 0) return false;  // m < 2^24 is no 32nd power of 3 or more
    for (int i = 0; i < k; ++i) {
      const auto s = static_cast<std::uint64_t>(__builtin_sqrt(static_cast<double>(root)));  // exact for a square
      if (s * s != root) return false;
      root = s;
    }
    ea >>= k;
  } else {
    if (ey > 5) return false;  // y >= 2^6: m^y has more than 53 bits
    n <<= ey;
  }
  std::uint64_t p = 1;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (p > (std::uint64_t{1} << 53) / root) return false;
    p *= root;
  }
  const long e = static_cast<long>(ea) * static_cast<long>(n);
  if (e < -1022 || e > 1023) return false;  // outside the range pow reaches here
  *out = static_cast<double>(p) * pow2(static_cast<int>(e));
  return true;
}

/// |x|^y correctly rounded, where its binary64 evaluation could not decide the rounding: the
/// double-double evaluation (detmath_accurate, about 2^-98), or the exact power where there is one.
float pow_accurate(float ax, float y) {
  double exact;
  if (exact_power(ax, y, &exact)) return static_cast<float>(exact);
  double lo;
  const double hi = lockstep::detmath_accurate::pow(ax, y, &lo);
  return round_dd(hi, lo);
}

}  // namespace

extern "C" {

float lockstep_sinf(float x) {
  if ((bits(x) & 0x7fffffffu) >= 0x7f800000u) return kNaN;  // for NaN and +-inf
  int q;
  const double r = reduced(x, &q);
  return round(sin_of(x, q, r), x, kHardSin);
}

float lockstep_cosf(float x) {
  if ((bits(x) & 0x7fffffffu) >= 0x7f800000u) return kNaN;
  int q;
  const double r = reduced(x, &q);
  return round(cos_of(q, r), x, kHardCos);
}

void lockstep_sincosf(float x, float* sin_out, float* cos_out) {
  if ((bits(x) & 0x7fffffffu) >= 0x7f800000u) {
    *sin_out = *cos_out = kNaN;
    return;
  }
  int q;
  const double r = reduced(x, &q);
  *sin_out = round(sin_of(x, q, r), x, kHardSin);
  *cos_out = round(cos_of(q, r), x, kHardCos);
}

float lockstep_tanf(float x) {
  if ((bits(x) & 0x7fffffffu) >= 0x7f800000u) return kNaN;
  int q;
  const double r = reduced(x, &q);
  const double s = sin_poly(r), c = cos_poly(r);
  const bool odd = (q & 1) != 0;
  // -c / s or s / c: one division of picked operands, the same quotient either way.
  const double t = negate_if(odd, pick(odd, c, s) / pick(odd, s, c));
  return round(negate_if(bits(x) >> 31 != 0, t), x, kHardTan);
}

float lockstep_atanf(float x) {
  const std::uint32_t ax = bits(x) & 0x7fffffffu;
  if (ax > 0x7f800000u) return kNaN;
  const double a = atan_pos(static_cast<double>(from_bits(ax)));
  return round(negate_if(bits(x) >> 31 != 0, a), x, kHardAtan);
}

float lockstep_asinf(float x) {
  const std::uint32_t ax = bits(x) & 0x7fffffffu;
  if (ax > 0x7f800000u) return kNaN;
  if (ax > 0x3f800000u) return kNaN;  // |x| > 1
  const double a = from_bits(ax);
  double r;
  if (a <= 0.5) {
    r = asin_near(a, nullptr);
  } else {  // asin a = pi/2 - 2 asin t, t = sqrt((1 - a) / 2) (exact but for the root)
    double lo;
    const double v = asin_near(__builtin_sqrt((1.0 - a) * 0.5), &lo);
    r = (kPiOver2Hi - 2.0 * v) + (kPiOver2Lo - 2.0 * lo);
  }
  return round(bits(x) >> 31 ? -r : r, x, kHardAsin);
}

float lockstep_acosf(float x) {
  const std::uint32_t ax = bits(x) & 0x7fffffffu;
  if (ax > 0x7f800000u) return kNaN;
  if (ax > 0x3f800000u) return kNaN;
  const double a = from_bits(ax);
  const bool negative = bits(x) >> 31;
  double lo, r;
  if (a <= 0.5) {  // pi/2 -+ asin a
    const double v = asin_near(a, &lo);
    r = negative ? (kPiOver2Hi + v) + (kPiOver2Lo + lo) : (kPiOver2Hi - v) + (kPiOver2Lo - lo);
  } else {  // 2 asin t, or pi - 2 asin t for negative x, t = sqrt((1 - a) / 2)
    const double v = asin_near(__builtin_sqrt((1.0 - a) * 0.5), &lo);
    r = negative ? (2.0 * kPiOver2Hi - 2.0 * v) + (2.0 * kPiOver2Lo - 2.0 * lo) : 2.0 * v + 2.0 * lo;
  }
  return round(r, x, kHardAcos);
}

float lockstep_atan2f(float y, float x) {
  const std::uint32_t ay = bits(y) & 0x7fffffffu, ax = bits(x) & 0x7fffffffu;
  if (ay > 0x7f800000u || ax > 0x7f800000u) return kNaN;
  const bool yneg = bits(y) >> 31 != 0, xneg = bits(x) >> 31 != 0;
  const double pi = 2 * kPiOver2Hi, pi_lo = 2 * kPiOver2Lo;
  double r;
  bool evaluated = false;  // r is atan's evaluation (the others are exact constants, rounded once)
  if (ay == 0) {  // +-0 or +-pi by x's sign (the sign of zero included)
    r = xneg ? pi : 0.0;
  } else if (ax == 0 || (ay == 0x7f800000u && ax != 0x7f800000u)) {
    r = kPiOver2Hi;
  } else if (ay == 0x7f800000u) {  // both infinite
    r = xneg ? 3 * kPiOver2Hi / 2 : kPiOver2Hi / 2;
  } else if (ax == 0x7f800000u) {
    r = xneg ? pi : 0.0;
  } else {
    const double a = from_bits(ay), b = from_bits(ax);
    const double t = atan_pos(a / b);  // the quotient of two floats: one rounding
    r = xneg ? (pi - t) + pi_lo : t;
    evaluated = true;
  }
  // r is for |y|: the sign is y's (atan2(-0, -x) = -pi too).
  const double v = yneg ? -r : r;
  // An evaluation is within 2^-49 of the exact value; near a rounding boundary, the accurate path
  // decides.
  if (!evaluated || LOCKSTEP_FAST_ONLY || sure(v)) return static_cast<float>(v);
  note_fell_back();
  double lo;
  const double hi = lockstep::detmath_accurate::atan2(y, x, &lo);
  return round_dd(hi, lo);
}

float lockstep_expf(float x) {
  if ((bits(x) & 0x7fffffffu) >= 0x42c80000u) {  // |x| >= 100, inf or NaN: one test on the common path
    if ((bits(x) & 0x7fffffffu) > 0x7f800000u) return kNaN;
    if (x > 100.0f) return kInf;
    if (x < -104.0f) return 0.0f;  // below 2^-150 (and exp(-inf) = +0)
  }
  const double v = x;
  const int k = round_to_int(v * k64OverLn2);
  const double r = (v - k * kLn2Over64Hi) - k * kLn2Over64Lo;
  return round(exp_scaled_short(k, r), x, kHardExp);
}

float lockstep_exp2f(float x) {
  if ((bits(x) & 0x7fffffffu) >= 0x43000000u) {  // |x| >= 128, inf or NaN
    if ((bits(x) & 0x7fffffffu) > 0x7f800000u) return kNaN;
    if (x >= 128.0f) return kInf;
    if (x < -151.0f) return 0.0f;
  }
  const double v = x;
  const int k = round_to_int(v * 64.0);
  const double r = (v - k * 0.015625) * kLn2;
  return round(exp_scaled_short(k, r), x, kHardExp2);
}

/// ln x (log2 false) or log2 x (log2 true) for a positive finite float, in double within about
/// 2^-51 of it: x = 2^e m, m in [sqrt(1/2), sqrt(2)), reduced as the binary64 log (log's table,
/// detmath_log_table.inc): c, m rounded to 8 fraction bits of its binade, v = 1/c to 10 bits, and
/// r = (m - c) v + (c v - 1), exact in double (m has 24 significant bits, so the sum fits in 26),
/// |r| < 2^-8.7. Then ln x = e ln 2 - ln v + r + (ln(1 + r) - r), the last to r^6/6 (r^7/7 < 2^-63)
/// by Estrin's scheme; log2 the same over ln 2 (its series' coefficients divided by ln 2). The
/// leading parts first and the small rest added to them once: where e = 0 and c != 1, |ln x| >
/// 2^-10.1, so the rest's rounding (2^-53 of |r|) stays below 2^-51.5 of it; where c = 1, ln v = 0
/// and the sum is r's; powers of two give e exactly.
[[gnu::always_inline]] inline double log_positive(float x, bool log2) {
  const LogSplit s = log_split(bits(static_cast<double>(x)));  // exact; a subnormal float is a normal double
  const double* row = kLogRows[s.i];
  const double v = row[0];
  const double r = (s.m - s.c) * v + (s.c * v - 1.0);
  const int e = s.e;
  const double* k = log2 ? kLog2fSeries : kLogfSeries;
  const double r2 = r * r;
  const double tail = r2 * (((k[0] + r * k[1]) + r2 * (k[2] + r * k[3])) + (r2 * r2) * k[4]);
  if (log2) return (e + row[3]) + ((r * kInvLn2Hi + (tail + row[4])) + r * kInvLn2Lo);
  return (e * kLn2Hi + row[1]) + ((r + (tail + row[2])) + e * kLn2Lo);
}

float lockstep_logf(float x) {
  if (float special; log_special(x, &special)) return special;
  return round(log_positive(x, false), x, kHardLog);
}

float lockstep_log2f(float x) {
  if (float special; log_special(x, &special)) return special;
  return round(log_positive(x, true), x, kHardLog2);
}

float lockstep_powf(float x, float y) {
  const std::uint32_t ux = bits(x), uy = bits(y);
  const std::uint32_t ax = ux & 0x7fffffffu, ay = uy & 0x7fffffffu;
  if (ay == 0) return 1.0f;                   // x^0 = 1, even for NaN
  if (ux == 0x3f800000u) return 1.0f;         // 1^y = 1, even for NaN
  if (ax > 0x7f800000u || ay > 0x7f800000u) return kNaN;
  // y's kind: 0 not an integer, 1 odd integer, 2 even integer.
  int kind = 0;
  {
    const int ey = static_cast<int>(ay >> 23) - 127;
    if (ey >= 24) kind = 2;
    else if (ey >= 0) {
      const std::uint32_t frac_mask = 0x7fffffu >> ey;
      if ((ay & frac_mask) == 0) kind = ((ay >> (23 - ey)) & 1) ? 1 : 2;
    }
  }
  const bool yneg = uy >> 31 != 0;
  if (ay == 0x7f800000u) {  // y = +-inf
    if (ax == 0x3f800000u) return 1.0f;  // (-1)^+-inf
    return (ax > 0x3f800000u) != yneg ? kInf : 0.0f;
  }
  const bool xneg = ux >> 31 != 0;
  const bool odd_neg = xneg && kind == 1;  // the result takes x's sign
  if (ax == 0 || ax == 0x7f800000u) {  // x = +-0 or +-inf
    const bool big = (ax == 0) == yneg;  // 0^-y and inf^+y are infinite
    const float r = big ? kInf : 0.0f;
    return odd_neg ? -r : r;
  }
  if (xneg && kind == 0) return kNaN;  // a negative number to a non-integer power
  // |x|^y = 2^(y log2|x|), log2|x| as a double-double so that y log2|x| keeps ~2^-60.
  int e;
  const double m = split_log(from_bits(ax), &e);
  const double num = m - 1.0, den = m + 1.0;
  const double s = num / den;
  // s's remainder: num - s den exactly.
  const DD prod = two_prod(s, den);
  const double s_rem = ((num - prod.hi) - prod.lo) / den;  // s + s_rem = num / den to ~2^-104
  const double s2 = s * s;
  const double tail = 2.0 * s_rem + s * s2 * log_series(s2);  // log(m) = 2s + tail
  // log2|x| = e + (2s + tail) / ln 2, as hi + lo.
  const double ls = 2.0 * s;
  const DD lp = two_prod(ls, kInvLn2Hi);
  const double rest = lp.lo + ls * kInvLn2Lo + tail * kInvLn2Hi;
  const DD h = two_sum(e, lp.hi);  // h.hi + h.lo = e + lp exactly
  const double h0 = h.hi, e0 = h.lo;
  const double l_hi = h0 + (rest + e0);
  const double l_lo = (rest + e0) - (l_hi - h0);
  // y log2|x| as hi + lo (the product's error exact).
  const double yd = y;
  const DD ty = two_prod(yd, l_hi);
  const double t = ty.hi, t_lo = ty.lo + yd * l_lo;
  float f;
  if (t > 129.0) f = kInf;
  else if (t < -151.0) f = 0.0f;
  else {
    const int k = round_to_int(t * 64.0);
    const double r = ((t - k * 0.015625) + t_lo) * kLn2;
    const double v = exp_scaled(k, r);  // within 2^-49 of |x|^y
    if (LOCKSTEP_FAST_ONLY || sure(v)) {
      f = static_cast<float>(v);
    } else {
      note_fell_back();
      f = pow_accurate(from_bits(ax), y);
    }
  }
  return odd_neg ? -f : f;
}

#ifdef LOCKSTEP_DETMATH_PROBE
int lockstep_detmath_fell_back() {
  const bool f = g_fell_back;
  g_fell_back = false;
  return f;
}
void lockstep_detmath_fast_only(int on) { g_fast_only = on != 0; }
#endif

}  // extern "C"
