// lockstep's math in binary64: sin, cos, sincos and tan (lockstep/detmath.h), evaluated in
// double-double arithmetic as detmath64.cpp says of every binary64 function. x is reduced modulo
// pi/2 by Cody-Waite below 2^19 pi and exactly, in integers from the bits of 2/pi, above.
// Compiled with -ffp-contract=off and without -ffast-math; nothing here calls libm.
#include <cstdint>

#include "detmath64_dd.hpp"
#include "detmath_bits.hpp"
#include "lockstep/detmath.h"

namespace {

// --- sin, cos, tan -----------------------------------------------------------------------------

/// |x| >= 2^19 pi reduced modulo pi/2 exactly: |x| 2/pi formed in integers from 224 bits of 2/pi
/// (the window that matters for x's exponent), as in detmath.cpp's binary32 reduction. The
/// fraction keeps more than 64 significant bits however close |x| is to a multiple of pi/2.
__attribute__((noinline)) DD reduce_large(double ax, int* q) {
  const std::uint64_t u = bits(ax);
  const int ex = static_cast<int>(u >> 52) - 1075;  // ax = m 2^ex
  const std::uint64_t m = (u & std::uint64_t{0x000fffffffffffff}) | std::uint64_t{0x0010000000000000};
  // Words of 2/pi before k0 only add multiples of 4 to |x| 2/pi.
  const int k0 = ex >= 34 ? (ex - 2) / 32 : 0;
  // m times words k0..k0+6: 9 words, least significant first, and two of zeros above.
  std::uint32_t w[11] = {};
  u128 carry = 0;
  for (int j = 6; j >= 0; --j) {
    const u128 t = static_cast<u128>(m) * kTwoOverPiWords[k0 + j] + carry;
    w[6 - j] = static_cast<std::uint32_t>(t);
    carry = t >> 32;
  }
  w[7] = static_cast<std::uint32_t>(carry);
  w[8] = static_cast<std::uint32_t>(carry >> 32);
  // The product has sh bits below its binary point (191 <= sh <= 256); t is its 128 bits from
  // 2 integer bits down.
  const int sh = 32 * (k0 + 7) - ex;
  auto bits_at = [&](int lo) {  // the 64 bits from bit lo up
    const int i = lo / 32, s = lo % 32;
    const u128 v = static_cast<u128>(w[i]) | (static_cast<u128>(w[i + 1]) << 32) | (static_cast<u128>(w[i + 2]) << 64);
    return static_cast<std::uint64_t>(v >> s);
  };
  const u128 t = (static_cast<u128>(bits_at(sh - 62)) << 64) | bits_at(sh - 126);
  *q = static_cast<int>(t >> 126) + static_cast<int>((t >> 125) & 1);
  // The fraction as a signed fixed-point number in [-1/2, 1/2), 2^-128 a unit.
  const auto s = static_cast<i128>(t << 2);
  const bool negative = s < 0;
  u128 a = negative ? static_cast<u128>(-s) : static_cast<u128>(s);
  if (a == 0) return {0.0, 0.0};
  const auto top = static_cast<std::uint64_t>(a >> 64);
  const int shift = top != 0 ? __builtin_clzll(top) : 64 + __builtin_clzll(static_cast<std::uint64_t>(a));
  a <<= shift;  // the leading one at bit 127: the value is a 2^(-128 - shift)
  const double fh = static_cast<double>(static_cast<std::uint64_t>(a >> 75)) * pow2(-53 - shift);  // 53 bits, exact
  const double fl = static_cast<double>(static_cast<std::uint64_t>(a >> 11)) * pow2(-117 - shift);  // the next 64
  const DD r = mul(quick_sum(fh, fl), kPiOver2);
  return negative ? neg(r) : r;
}

/// |x| = (4n + q) pi/2 + r with |r| <= pi/4 (a hair more where k's rounding is a tie): r, and q.
LOCKSTEP_DD DD reduce(double ax, int* q) {
  if (ax < 0x1.921fb54442d18p+20) {
    // |x| < 2^19 pi, k < 2^20: Cody-Waite with pi/2 in four parts, k P1, k P2, k P3 exact (33
    // bits each) and |x| - k P1 exact (within a factor of 2); pi/2's parts reach 2^-152.
    const int k = nearest_int(ax * kTwoOverPi);
    const double kd = k;
    *q = k;
    const double t = ax - kd * kPiOver2Cw[0];
    const DD r = add(two_sum(t, -(kd * kPiOver2Cw[1])), -(kd * kPiOver2Cw[2]));
    return add(r, -(kd * kPiOver2Cw[3]));
  }
  return reduce_large(ax, q);
}

/// c[f] - x c[f + 2] + x^2 c[f + 4] - ... + x^6 c[f + 12]: seven of every other coefficient of an
/// alternating series (sin's and cos's terms after their leading ones, x = r^2), by Estrin's
/// scheme: pairs joined by x^2 and x^4, a chain of four steps where Horner's has six.
LOCKSTEP_DD double every_other(const double* c, int f, double x) {
  const double x2 = x * x, x4 = x2 * x2;
  return ((c[f] - x * c[f + 2]) + x2 * (c[f + 4] - x * c[f + 6])) + x4 * ((c[f + 8] - x * c[f + 10]) + x2 * c[f + 12]);
}

/// |x| (finite) as (4n + q) pi/2 + r: r as is below pi/4 (q = 0), else reduce()'s.
LOCKSTEP_DD DD reduced(double ax, int* q) {
  if (bits(ax) < std::uint64_t{0x3fe921fb54442d18}) {
    *q = 0;
    return {ax, 0.0};
  }
  return reduce(ax, q);
}

/// sin r for |r| <= pi/4 + 2^-40: r - r^3/3! + ... + r^17/17! (r^19/19! < 2^-63 |r|); r^3/6 as a
/// double-double (it reaches 0.08 |r|), r and it summed exactly, the rest (with r.lo's share of
/// the cubic term) rounded.
LOCKSTEP_DD DD sin_dd(DD r) {
  const double x = r.hi;
  const DD sq = two_prod(x, x);
  const double x2 = sq.hi;
  const DD c3 = mul(mul(sq, x), kSixth);
  const double rest = x * x2 * x2 * every_other(kInvFact, 5, x2);
  const DD s = quick_sum(x, -c3.hi);  // |r| > r^3/6
  return quick_sum(s.hi, s.lo + ((r.lo - c3.lo) + (rest - 0.5 * x2 * r.lo)));
}

/// cos r for |r| <= pi/4 + 2^-40: 1 - r^2/2! + r^4/4! - ... - r^18/18! (r^20/20! < 2^-67);
/// r^2/2 and r^4/24 as double-doubles (the second reaches 0.016, too much to round in double),
/// 1 and their leading parts summed exactly, the rest (with r.lo's share) rounded.
LOCKSTEP_DD DD cos_dd(DD r) {
  const double x = r.hi;
  const DD sq = two_prod(x, x);
  const double x2 = sq.hi;
  const DD c4 = mul(mul(sq, sq), kTwentyFourth);
  const double rest = -x2 * x2 * x2 * every_other(kInvFact, 6, x2);
  const DD s1 = quick_sum(1.0, -0.5 * x2);  // 1 > r^2/2
  const DD s2 = quick_sum(s1.hi, c4.hi);     // > 0.69 > r^4/24
  const double lo = (s1.lo + s2.lo) + ((c4.lo - (0.5 * sq.lo + x * r.lo)) + (rest + x * x2 * r.lo * kInvFact[3]));
  return quick_sum(s2.hi, lo);
}

/// tan |r| (cot false) or cot |r| (true) for |r| <= pi/4 + 2^-40, the double nearest it (within
/// 1/2 + 2^-7 ulp): c = i/64 the nearest to |r| and u = |r| - c (|u| <= 1/128), tan u = u + u^3/3
/// + 2u^5/15 + ... + 1382u^11/155925 (u^13's term < 2^-84 |u|), and tan(c + u) = (T + tan u) / (1 - T
/// tan u) with T = tan c (a table). T + tan u as a double-double (T >= 1/64 > 2|tan u|, or T = 0),
/// T tan u rounded (< 2^-6.9: within 2^-60 of 1 - T tan u), then the quotient: for tan without a
/// split product (below), for cot by one double-double division. Far fewer operations than
/// sin |r| / cos |r| (what tan was before).
LOCKSTEP_DD double tan_abs(DD r, bool cot) {
  const int i = nearest_int(r.hi * 64.0);
  const double c = i * 0.015625;
  const DD u = two_sum(r.hi - c, r.lo);  // r.hi - c exact: within a factor of 2, or c = 0
  const double uh = u.hi, v = uh * uh;
  const double* k = kTanC;
  const double series = uh * v * (k[0] + v * (k[1] + v * (k[2] + v * (k[3] + v * k[4]))));
  const DD t = quick_sum(uh, u.lo + (series + v * u.lo));
  const DD& tc = kTanTable[i];
  const DD s = quick_sum(tc.hi, t.hi);
  const DD num = quick_sum(s.hi, s.lo + (tc.lo + t.lo));
  const double p = tc.hi * t.hi + (tc.hi * t.lo + tc.lo * t.hi);  // T tan u, |p| < 2^-6.9
  if (!cot) {
    // num / (1 - p) without a split product: q0 = num (1 + p) is within p^2 of it, num.hi - q0 is
    // exact (they are within 1 %), q0 p is within 2^-60 of q0, and the remainder's quotient
    // (2^-13 of the result) needs only a double's accuracy.
    const double q0 = num.hi + num.hi * p;
    const double rem = ((num.hi - q0) + q0 * p) + num.lo;
    return q0 + rem / (1.0 - p);
  }
  return div(quick_sum(1.0, -p), num).hi;
}

/// sin x from sin |r| or cos |r| (v, as q asks), with x = +-((4n + q) pi/2 + r): signed by the
/// quadrant and x's sign.
double sin_of(double x, int q, double v) { return copysign_d(1.0, x) * (q & 2 ? -v : v); }
/// cos x likewise (even in x).
double cos_of(int q, double v) { return ((q + 1) & 2) ? -v : v; }

}  // namespace

extern "C" {

double lockstep_sin(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u >= kInfBits) return kNaN64;
  if (u < std::uint64_t{0x3e50000000000000}) return x;  // |x| < 2^-26: sin x rounds to x
  int q = 0;
  const DD r = reduced(from_bits(u), &q);
  return sin_of(x, q, (q & 1 ? cos_dd(r) : sin_dd(r)).hi);
}

double lockstep_cos(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u >= kInfBits) return kNaN64;
  if (u < std::uint64_t{0x3e40000000000000}) return 1.0;  // |x| < 2^-27
  int q = 0;
  const DD r = reduced(from_bits(u), &q);
  return cos_of(q, (q & 1 ? sin_dd(r) : cos_dd(r)).hi);
}

void lockstep_sincos(double x, double* sin_out, double* cos_out) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u >= kInfBits) {
    *sin_out = *cos_out = kNaN64;
    return;
  }
  if (u < std::uint64_t{0x3e40000000000000}) {
    *sin_out = x;
    *cos_out = 1.0;
    return;
  }
  int q = 0;
  const DD r = reduced(from_bits(u), &q);
  const DD s = sin_dd(r), c = cos_dd(r);
  *sin_out = sin_of(x, q, q & 1 ? c.hi : s.hi);
  *cos_out = cos_of(q, q & 1 ? s.hi : c.hi);
}

double lockstep_tan(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u >= kInfBits) return kNaN64;
  if (u < std::uint64_t{0x3e40000000000000}) return x;  // |x| < 2^-27: tan x rounds to x
  int q = 0;
  DD r = reduced(from_bits(u), &q);
  // tan x = tan r for even q, -cot r for odd; both odd in r.
  double sign = copysign_d(1.0, x);
  if (r.hi < 0.0) {
    r = neg(r);
    sign = -sign;
  }
  return q & 1 ? -sign * tan_abs(r, true) : sign * tan_abs(r, false);
}

}  // extern "C"
