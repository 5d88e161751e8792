// lockstep's math in binary64 (lockstep/detmath.h, the functions without the f): the same bits on
// every machine, and within 1 ulp of the exact value. Each function is evaluated in double-double
// arithmetic (a value as the unevaluated sum hi + lo, |lo| <= ulp(hi) / 2) made of IEEE-754
// binary64 +, -, * and / alone: exact products by Dekker's splitting, never an FMA, so every
// machine rounds the same operations the same way. Before its last rounding a result carries a
// relative error of at most about 2^-56 (most functions 2^-60), so the double returned is within
// 1/2 + 1/8 ulp of the exact value, and almost always the correctly rounded one
// (tools/detmath64_check.cpp measures it against MPFR; docs/DETMATH.md has its figures).
// The exact functions (sqrt, fmod, floor, ceil, round, trunc, fmin, fmax) are exact here as in
// binary32. sin, cos and tan are detmath64_trig.cpp's; what both files share, detmath64_dd.hpp. Compiled, like detmath.cpp, with -ffp-contract=off and without -ffast-math; nothing
// here calls libm.
#include <cstdint>

#include "detmath64_dd.hpp"
#include "detmath_accurate.hpp"
#include "detmath_bits.hpp"
#include "lockstep/detmath.h"

namespace {
// --- exp, exp2 ---------------------------------------------------------------------------------

/// 2^(k/64) e^(r + rlo) for |r| <= 0.0055 and |rlo| <= 2^-50 |r|, rounded to a double: 2^(j/64) as
/// hi + lo (a table), and e^r - 1 = r + r^2/2! + ... + r^6/6! (r^7/7! < 2^-64), the terms after r
/// by Estrin's scheme. Only the last addition rounds at the result's scale, so the error is below
/// 0.5 ulp + 2^-59 relative; a subnormal result is rounded once too, on the subnormals' grid.
/// e^(r + rlo) - 1 for exp_finish and exp_normal.
LOCKSTEP_DD double expm1_short(double r, double rlo) {
  const double* c = kInvFact;
  const double r2 = r * r;
  const double q = r2 * (((c[2] + r * c[3]) + r2 * (c[4] + r * c[5])) + (r2 * r2) * c[6]);
  return r + (rlo + q);
}
LOCKSTEP_DD double exp_finish(int k, double r, double rlo) {
  const double p = expm1_short(r, rlo);
  const DD& t = kExp2Table[k & 63];
  const int n = k >> 6;  // floor(k / 64)
  const double tail = t.lo + t.hi * p;
  if (n > -1022 || (n == -1022 && t.hi + tail >= 1.0)) return scale(t.hi + tail, n);
  // A result among the subnormals: rounded once, on their grid, from the exact sum of t.hi and
  // the tail, in units of 2^-1074 (scaling by 2^(n + 1074), 0 <= n + 1074 <= 52, is exact, and
  // the scaled value is below 2^52).
  if (n < -1075) return 0.0;
  const DD v = two_sum(t.hi, tail);
  const double h = v.hi * pow2(n + 1074), l = v.lo * pow2(n + 1074);
  double i = (h + 0x1p52) - 0x1p52;  // h (>= 0) to the nearest integer, ties to even
  if (fabs_d(h - i) == 0.5 && l != 0.0) i = l > 0.0 ? i + (h > i ? 1.0 : 0.0) : i - (h < i ? 1.0 : 0.0);
  return i * 0x1p-1074;
}

/// exp_finish where the result is known normal (|k| <= 65344: 2^(k >> 6) and the result normal
/// doubles): the same value, scaled by one multiplication and no test.
LOCKSTEP_DD double exp_normal(int k, double r, double rlo) {
  const double p = expm1_short(r, rlo);
  const DD& t = kExp2Table[k & 63];
  return (t.hi + (t.lo + t.hi * p)) * pow2(k >> 6);
}

/// z = k ln(2)/64 + r for |z.hi| <= 746: r as a normalized double-double (z.lo may be large), k in
/// *k. ln(2)/64 in three parts: k L1 and k L2 exact for |k| < 2^17, and z.hi - k L1 exact (both
/// lie on L1's grid or finer and within 2^-7 of each other).
LOCKSTEP_DD DD exp_reduce(DD z, int* k) {
  const Nearest n = nearest(z.hi * k64OverLn2);
  *k = n.k;
  const double kd = n.kd;
  const DD t = two_sum(z.hi - kd * kLn2Over64[0], -(kd * kLn2Over64[1]));
  return two_sum(t.hi, t.lo + (z.lo - kd * kLn2Over64[2]));
}

/// e^z for |z.hi| <= 746.
LOCKSTEP_DD double exp_dd(DD z) {
  int k;
  const DD r = exp_reduce(z, &k);
  return exp_finish(k, r.hi, r.lo);
}

// --- log, log2 ---------------------------------------------------------------------------------

/// Finite x > 0 as 2^e m, m in [sqrt(1/2), sqrt(2)), and m v - 1 = r exactly as a double-double:
/// c, m rounded to 8 fraction bits of its binade (half up: a multiple of 2^-9 below 1, of 2^-8
/// from 1 on), and v = 1/c to 10 significant bits (a table): (m - c) v is exact (m - c has at most
/// 43 significant bits), and so is c v - 1 (c has 9), so r is their exact sum (|r| < 2^-8.7), with
/// no division and no split product. Then ln x = e ln 2 - ln v + ln(1 + r), -ln v from a table.
/// e, m, c and c's row from log_split (detmath_bits.hpp).
struct LogReduced {
  int e, i;
  DD r;
};
LOCKSTEP_DD LogReduced log_reduce(double x) {
  std::uint64_t u = bits(x);
  int e = 0;
  if (u < std::uint64_t{0x0010000000000000}) {  // subnormal: normalized exactly
    u = bits(x * 0x1p54);
    e = -54;
  }
  const LogSplit s = log_split(u);
  const double v = kLogRows[s.i][0];
  return {e + s.e, s.i, two_sum((s.m - s.c) * v, s.c * v - 1.0)};
}

/// ln(1 + r) - r for |r| < 2^-8.7 in double: -r^2/2 + r^3/3 - ... - r^8/8 (r^9/9 < 2^-81), by
/// Estrin's scheme; with v = kInvLn2Over, that over ln 2 (log2's), each coefficient 1/(k ln 2).
LOCKSTEP_DD double log1p_tail(double r, const double* v = kInv) {
  const double r2 = r * r, r4 = r2 * r2;
  return r2 * (((r * v[3] - v[2]) + r2 * (r * v[5] - v[4])) + r4 * ((r * v[7] - v[6]) - r2 * v[8]));
}

/// ln x for finite x > 0 as a double-double, for pow, where y ln x must keep 2^-66 relative: as
/// log_reduce, with ln(1 + r) = r - r^2/2 + r^3/3 - ... - r^8/8 (r^9/9 < 2^-81.6, below 2^-71 of
/// ln x: |ln x| >= 2^-10 where c != 1, and r = m - 1 where c = 1). r^2/2 without
/// Dekker's splitting: r's first 26 bits (rh, by masking) square exactly, and the rest of r^2/2,
/// rl (r + rh) / 2 with rl = r - rh, is below 2^-17 of it. e ln 2's first part and -ln v, r, and
/// -rh^2/2 summed exactly (each sum of two doubles whose larger comes first: |e ln 2 - ln v| >
/// |r| unless it is 0, and |r| > r^2/2), the rest (below 2^-7 of the result) rounded.
LOCKSTEP_DD DD log_for_pow(double x) {
  const LogReduced a = log_reduce(x);
  const double r = a.r.hi;
  const double rh = high26(r);
  const double rl = (r - rh) + a.r.lo;
  const double* v = kInv;
  const double r2 = r * r, r4 = r2 * r2;
  // The tail by Estrin's scheme (pairs joined by r^2 and r^4: a shorter chain than Horner's), in
  // an order written out, so every machine rounds the same operations.
  const double tail = r * r2 * (((v[3] - r * v[4]) + r2 * (v[5] - r * v[6])) + r4 * (v[7] - r * v[8]));
  const double ed = a.e;
  const DD t = {kLogRows[a.i][1], kLogRows[a.i][2]};
  const DD s1 = quick_sum(ed * kLn2Split[0], t.hi);  // |e ln 2| > |ln v| unless e = 0
  const DD s2 = quick_sum(s1.hi, r);
  const DD s3 = quick_sum(s2.hi, -0.5 * (rh * rh));
  const double lo = ((s1.lo + s2.lo) + s3.lo) + ((ed * kLn2Split[1] + t.lo) + ((a.r.lo - 0.5 * (rl * (r + rh))) + tail));
  return quick_sum(s3.hi, lo);
}

// --- atan, atan2, asin, acos -------------------------------------------------------------------

/// a c exactly, for c of at most 26 significant bits (i/32): only a is split.
LOCKSTEP_DD DD two_prod_short(double a, double c) {
  const double ca = 134217729.0 * a, ah = ca - (ca - a), al = a - ah;
  const double p = a * c;
  return {p, (ah * c - p) + al * c};
}

/// atan c + atan u, c = i/32 (a table of atan c), u = num / den (|u| <= 1/63), as q + ulo (one
/// division, then the exact remainder), atan u = u - u^3/3 + ... - u^11/11 (u^13/13 < 2^-75 |u|);
/// atan c and q summed exactly, the rest rounded, the series last (the longest chain).
LOCKSTEP_DD DD atan_finish(int i, DD num, DD den) {
  const double inv = 1.0 / den.hi;
  const double q = num.hi * inv;
  const DD qd = two_prod(q, den.hi);
  const double ulo = (((num.hi - qd.hi) - qd.lo) + (num.lo - q * den.lo)) * inv;
  const double* v = kInv;
  const double x2 = q * q, x4 = x2 * x2;  // Estrin's scheme, as in log1p_tail
  const double tail = -q * x2 * ((v[3] - x2 * v[5]) + x4 * ((v[7] - x2 * v[9]) + x4 * v[11]));
  const DD& a = kAtanTable[i];
  const DD s = quick_sum(a.hi, q);  // atan c >= 0.031 > |u|, or c = 0
  return quick_sum(s.hi, (s.lo + (a.lo + ulo)) + tail);
}

/// atan t for t = th + tl in [0, 1] (a hair more; |tl| <= ulp(th), 0 for a double): c = i/32 the
/// nearest (th rounded to a multiple of 1/32 by adding and taking away 1.5 2^47, which also leaves
/// i in the sum's last bits), u = (t - c) / (1 + t c), |u| <= 1/64.
LOCKSTEP_DD DD atan_core(double th, double tl) {
  const double sum = th + 0x1.8p47;  // th's multiple of 2^-5 in the last bits, ties to even
  const int i = static_cast<int>(bits(sum) & 63u);
  const double c = sum - 0x1.8p47;
  const DD num = two_sum(th - c, tl);  // th - c exact: within a factor of 2, or c = 0
  const DD tc = two_prod_short(th, c);
  const DD den = quick_sum(1.0, tc.hi);  // 1 + t c, t c <= 1
  return atan_finish(i, num, {den.hi, den.lo + (tc.lo + tl * c)});
}

/// atan(1/a) for a double a > 1, without dividing for 1/a first: c = i/32 near 1/a from a table
/// by a's leading bits (0 from 64 on), u = (1 - a c) / (a + c), |u| <= 1/63; a c exact as a
/// double-double (c has 6 bits), 1 - its leading part exact (a c is within [1/2, 2]).
LOCKSTEP_DD DD atan_of_inverse(double a) {
  const int i = a < 64.0 ? kAtanInverseIndex[(bits(a) >> 46) - (std::uint64_t{0x3ff} << 6)] : 0;
  const double c = i * 0.03125;
  const DD p = two_prod_short(a, c);
  return atan_finish(i, two_sum(1.0 - p.hi, -p.lo), two_sum(a, c));
}

/// pi/2 - a for a in [0, pi/2] as a double-double.
LOCKSTEP_DD DD pi_over_2_minus(DD a) {
  const DD s = quick_sum(kPiOver2.hi, -a.hi);
  return quick_sum(s.hi, s.lo + (kPiOver2.lo - a.lo));
}

/// The angle of the point (ax, ay) for ax, ay >= 0, not both 0, each within 2^-64..2^2 of the
/// other's scale: atan(ay / ax) in [0, pi/2], through the octant below pi/4.
LOCKSTEP_DD DD angle(DD ay, DD ax) {
  if (ay.hi <= ax.hi) {
    const DD t = div(ay, ax);
    return atan_core(t.hi, t.lo);
  }
  const DD t = div(ax, ay);
  return pi_over_2_minus(atan_core(t.hi, t.lo));
}

/// asin t for t = th + tl, th in [0, 1/2] and |tl| <= 2^-52 th (0, or a square root's
/// correction), as a double-double within about 2^-63 of it: asin's Taylor series about c = i/64,
/// the nearest to th (a table: asin c and asin'(c) as double-doubles, then h^2's to h^9's
/// coefficients; h^10's term is below 2^-65 of the result for |h| = |th - c| <= 1/128). asin c and
/// h asin'(c) (exact as a double-double) summed exactly, the rest rounded; tl adds tl asin'(c).
LOCKSTEP_DD DD asin_series(double th, double tl) {
  const int i = nearest_int(th * 64.0);
  const double* k = kAsinTaylor[i];
  const double h = th - i * 0.015625;  // exact: within a factor of 2, or c = 0
  const double rest = h * h * (k[4] + h * (k[5] + h * (k[6] + h * (k[7] + h * (k[8] + h * (k[9] + h * (k[10] + h * k[11])))))));
  const DD p = two_prod(h, k[2]);
  const DD s = quick_sum(k[0], p.hi);  // asin c >= c >= 1/64 > |h asin'(c)|, or c = 0
  return quick_sum(s.hi, s.lo + ((k[1] + p.lo) + ((h * k[3] + tl * k[2]) + rest)));
}

/// For a in (1/2, 1]: t = sqrt((1 - a) / 2) as a double-double (t in [0, 1/2)), so that asin a =
/// pi/2 - 2 asin t and acos a = 2 asin t. (1 - a) / 2 is exact; the root gets one correction from
/// its exact remainder.
LOCKSTEP_DD DD half_root(double a) {
  const double z = (1.0 - a) * 0.5;
  const double s = __builtin_sqrt(z);
  if (s == 0.0) return {0.0, 0.0};
  const DD ss = two_prod(s, s);
  return {s, ((z - ss.hi) - ss.lo) / (s + s)};
}

/// floor(log2 |a|) for a finite a != 0, subnormals included.
int exponent_of(double a) {
  const std::uint64_t u = bits(a) & kAbs;
  return u < std::uint64_t{0x0010000000000000} ? -1011 - __builtin_clzll(u) : static_cast<int>(u >> 52) - 1023;
}

// --- pow ---------------------------------------------------------------------------------------

/// 0: y is not an integer; 1: an odd integer; 2: an even one (y finite).
int integer_kind(double y) {
  const std::uint64_t u = bits(y) & kAbs;
  const int e = static_cast<int>(u >> 52) - 1023;
  if (e < 0) return u == 0 ? 2 : 0;
  if (e >= 53) return 2;
  if (u & ((std::uint64_t{1} << (52 - e)) - 1)) return 0;
  return ((u | std::uint64_t{0x0010000000000000}) >> (52 - e)) & 1 ? 1 : 2;
}

// --- the accurate paths (detmath_accurate.hpp) ---------------------------------------------------

/// atan t for a double-double t in [0, 1], to about 2^-100: as atan_core (c = i/32), with u = (t
/// - c) / (1 + t c) as a double-double and atan u = u (1 - u^2/3 + u^4/5 - ... + u^18/19) (u^21/21
/// < 2^-124 |u|), the terms to u^9/9 by Horner's scheme in double-double, the rest in double.
DD atan_accurate(DD t) {
  const int i = nearest_int(t.hi * 32.0);
  const double c = i * 0.03125;
  const DD u = div(add(t, -c), add(mul(t, c), 1.0));
  const DD w = mul(u, u);
  const double* v = kInv;
  const double x = w.hi;
  const double q = v[11] - x * (v[13] - x * (v[15] - x * (v[17] - x * v[19])));
  DD p = add(kInvDD[9], -(x * q));
  for (int k = 7; k >= 1; k -= 2) p = add(kInvDD[k], neg(mul(w, p)));
  return add(kAtanTable[i], mul(u, p));
}

/// ln x for finite x > 0 to about 2^-100: log_reduce's exact r, ln(1 + r) = r (1 - r (1/2 - r (1/3
/// - ...))) to r^15/15 (r^16/16 < 2^-125), the terms to r^7/7 by Horner's scheme in double-double,
/// e ln 2 with ln 2's first 42 bits exact times e.
DD log_accurate(double x) {
  const LogReduced a = log_reduce(x);
  const DD r = a.r;
  const double h = r.hi;
  const double* v = kInv;
  const double q = v[8] - h * (v[9] - h * (v[10] - h * (v[11] - h * (v[12] - h * (v[13] - h * (v[14] - h * v[15]))))));
  DD p = add(kInvDD[7], -(h * q));
  for (int k = 6; k >= 1; --k) p = add(kInvDD[k], neg(mul(r, p)));
  const DD ln_m = add(DD{kLogRows[a.i][1], kLogRows[a.i][2]}, mul(r, p));
  const double ed = a.e;
  return add(add(DD{ed * kLn2Split[0], 0.0}, mul(kLn2Rest, ed)), ln_m);
}

/// e^z for |z.hi| < 120 to about 2^-100, as hi + lo (unscaled: *scale2 gets the power of two):
/// z = k ln(2)/64 + r (exp_reduce), e^r = 1 + r + ... + r^10/10! (r^11/11! < 2^-107), the terms to
/// r^6/6! by Horner's scheme in double-double.
DD exp_accurate(DD z, int* scale2) {
  int k;
  const DD r = exp_reduce(z, &k);
  const double h = r.hi;
  const double* c = kInvFact;
  const double q = c[7] + h * (c[8] + h * (c[9] + h * c[10]));
  DD p = add(kInvFactDD[6], h * q);
  for (int j = 5; j >= 0; --j) p = add(kInvFactDD[j], mul(r, p));
  *scale2 = k >> 6;
  return mul(kExp2Table[k & 63], p);
}

/// e^(zh + zl) for |zh| <= 746, |zl| < 2^-25 |zh|, rounded to a double: k and r as exp_reduce, but
/// r rounded once (r = zh - k L1 exact, then the small rest: 2^-53 of |r| <= 2^-60.5), the exact
/// split left to exp_finish. Out of line: only y ln x near the ends of the range comes here.
__attribute__((noinline)) double pow_exp_extreme(double zh, double zl) {
  if (zh > 709.8) return kInf64;
  if (zh < -745.2) return 0.0;
  const int k = nearest_int(zh * k64OverLn2);
  const double kd = k;
  const double r = (zh - kd * kLn2Over64[0]) + (zl - kd * kLn2Over64[1]);
  return exp_finish(k, r, -(kd * kLn2Over64[2]));
}

/// x^y for x > 0 finite, y finite and nonzero, x != 1: e^(y ln x), y ln x as a double-double.
LOCKSTEP_DD double pow_positive(double x, double y) {
  const DD l = log_for_pow(x);
  if ((bits(y) & kAbs) >= std::uint64_t{0x43f0000000000000})  // |y| >= 2^64 and x != 1: |y ln x| > 2^11
    return (l.hi > 0) == (y > 0) ? kInf64 : 0.0;
  // y ln x exactly enough without Dekker's splitting: y and l.hi cut to 26 significant bits by
  // masking, so that their product is exact; the rest (below 2^-25 of the whole) rounds once.
  const double yh = high26(y), yl = y - yh;
  const double lh = high26(l.hi), ll = (l.hi - lh) + l.lo;
  const double zh = yh * lh, zl = yl * lh + y * ll;
  if (!(fabs_d(zh) < 708.0)) return pow_exp_extreme(zh, zl);
  // |z| < 708 (a hair more with zl): k = round(z 64 / ln 2) in [-65373, 65372], so the result is
  // normal (exp_normal).
  const Nearest k = nearest(zh * k64OverLn2);
  const double r = (zh - k.kd * kLn2Over64[0]) + (zl - k.kd * kLn2Over64[1]);
  return exp_normal(k.k, r, -(k.kd * kLn2Over64[2]));
}

/// pow's other cases: a zero, infinite or NaN operand, or x negative.
__attribute__((noinline)) double pow_special(double x, double y) {
  const std::uint64_t ux = bits(x) & kAbs, uy = bits(y) & kAbs;
  if (uy == 0 || x == 1.0) return 1.0;
  if (ux > kInfBits || uy > kInfBits) return kNaN64;
  const bool x_negative = bits(x) >> 63;
  if (uy == kInfBits) {  // |x| against 1
    if (ux == std::uint64_t{0x3ff0000000000000}) return 1.0;  // (-1)^+-inf
    return (ux < std::uint64_t{0x3ff0000000000000}) == (y < 0) ? kInf64 : 0.0;
  }
  const int kind = integer_kind(y);
  const bool odd = kind == 1;
  if (ux == 0 || ux == kInfBits) {  // +-0 and +-inf: 0^y = 1 / inf^y
    const bool big = (ux == kInfBits) == (y > 0);
    const double v = big ? kInf64 : 0.0;
    return x_negative && odd ? -v : v;
  }
  if (x_negative && kind == 0) return kNaN64;
  const double sign = x_negative && odd ? -1.0 : 1.0;
  const double ax = from_bits(ux);
  if (ax == 1.0) return sign;  // (-1)^y for an integer y
  return sign * pow_positive(ax, y);
}

}  // namespace

namespace lockstep::detmath_accurate {

double atan2(double y, double x, double* lo) {
  const double ay = fabs_d(y), ax = fabs_d(x);
  DD a = ay <= ax ? atan_accurate(div({ay, 0.0}, {ax, 0.0})) : pi_over_2_minus(atan_accurate(div({ax, 0.0}, {ay, 0.0})));
  if (x < 0) a = add(kPi, neg(a));
  if (y < 0) a = neg(a);
  *lo = a.lo;
  return a.hi;
}

double pow(double x, double y, double* lo) {
  int n = 0;
  const DD e = exp_accurate(mul(log_accurate(x), y), &n);
  *lo = scale(e.lo, n);  // exact: the result is well inside the double range
  return scale(e.hi, n);
}

}  // namespace lockstep::detmath_accurate

extern "C" {

double lockstep_exp(double x) {
  if (fabs_d(x) < 708.0) {  // the common case: a normal result (exp_normal)
    int k;
    const DD r = exp_reduce({x, 0.0}, &k);
    return exp_normal(k, r.hi, r.lo);
  }
  if (x != x) return kNaN64;
  if (x > 709.8) return kInf64;
  if (x < -745.2) return 0.0;
  return exp_dd({x, 0.0});
}

double lockstep_exp2(double x) {
  if (fabs_d(x) < 1020.0) {  // the common case: a normal result (exp_normal)
    const Nearest k = nearest(x * 64.0);  // x 64 exact
    const double r = x - k.kd * 0.015625;   // exact, |r| <= 1/128
    const DD z = two_prod(r, kLn2.hi);      // r ln 2
    return exp_normal(k.k, z.hi, z.lo + r * kLn2.lo);
  }
  if (x != x) return kNaN64;
  if (x >= 1024.0) return kInf64;
  if (x < -1080.0) return 0.0;
  const int k = nearest_int(x * 64.0);
  const double r = x - k * 0.015625;
  const DD z = two_prod(r, kLn2.hi);
  return exp_finish(k, z.hi, z.lo + r * kLn2.lo);
}

double lockstep_log(double x) {
  const std::uint64_t u = bits(x);
  if ((u & kAbs) == 0) return -kInf64;  // +-0
  if (u >= kInfBits) return u == kInfBits ? x : kNaN64;  // +inf; NaN and every negative
  // e ln 2 (its first part exact times e), -ln v and r summed exactly, the small rest rounded:
  // 0.5 ulp + 2^-60 relative.
  const LogReduced a = log_reduce(x);
  const double ed = a.e;
  const DD t = {kLogRows[a.i][1], kLogRows[a.i][2]};
  const DD h1 = quick_sum(ed * kLn2Split[0], t.hi);  // |e ln 2| > |ln v| unless e = 0
  const DD h2 = quick_sum(h1.hi, a.r.hi);  // |e ln 2 - ln v| > 1.98 |r| unless it is 0 (checked over the table)
  // The tail (the longest chain) joins last, to the sum of the small parts.
  const double small = (h1.lo + h2.lo) + ((ed * kLn2Split[1] + t.lo) + a.r.lo);
  return h2.hi + (small + log1p_tail(a.r.hi));
}

double lockstep_log2(double x) {
  const std::uint64_t u = bits(x);
  if ((u & kAbs) == 0) return -kInf64;  // +-0
  if (u >= kInfBits) return u == kInfBits ? x : kNaN64;
  // e - log2 v (a table) and r / ln 2 (its leading part exact) summed exactly, the rest rounded:
  // powers of two exact.
  const LogReduced a = log_reduce(x);
  const DD t = {kLogRows[a.i][3], kLogRows[a.i][4]};
  const DD s1 = quick_sum(static_cast<double>(a.e), t.hi);  // |e| >= 1 > |log2 v|, or e = 0
  // r / ln 2 without Dekker's splitting: r's first 26 bits (by masking) times 1/ln 2's first 26
  // exact, the rest (below 2^-25 of it) rounded.
  const double rh = high26(a.r.hi), rl = a.r.hi - rh;
  const double ph = rh * kInvLn2Split[0];
  const double pl = rl * kInvLn2Split[0] + a.r.hi * kInvLn2Split[1];
  const DD s2 = quick_sum(s1.hi, ph);  // |e - log2 v| > 1.98 |r / ln 2| unless it is 0, as in log
  // The tail (the longest chain) joins last, to the sum of the small parts.
  const double small = ((s1.lo + s2.lo) + (t.lo + pl)) + a.r.lo * kInvLn2.hi;
  return s2.hi + (small + log1p_tail(a.r.hi, kInvLn2Over));
}

double lockstep_pow(double x, double y) {
  // The common case apart, the rest out of line: x positive and finite, y finite and nonzero.
  if (bits(x) - 1 < kInfBits - 1 && (bits(y) & kAbs) - 1 < kInfBits - 1) return x == 1.0 ? 1.0 : pow_positive(x, y);
  return pow_special(x, y);
}

double lockstep_atan(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u > kInfBits) return kNaN64;
  if (u < std::uint64_t{0x3e40000000000000}) return x;                   // |x| < 2^-27: atan x rounds to x
  if (u >= std::uint64_t{0x43b0000000000000}) return copysign_d(kPiOver2.hi, x);  // |x| >= 2^60, inf included
  const double a = from_bits(u);
  if (a <= 1.0) return copysign_d(atan_core(a, 0.0).hi, x);
  return copysign_d(pi_over_2_minus(atan_of_inverse(a)).hi, x);
}

double lockstep_atan2(double y, double x) {
  const std::uint64_t uy = bits(y) & kAbs, ux = bits(x) & kAbs;
  if (uy > kInfBits || ux > kInfBits) return kNaN64;
  const bool x_negative = bits(x) >> 63;
  if (uy == 0) return copysign_d(x_negative ? kPi.hi : 0.0, y);  // +-0 or +-pi
  if (ux == 0) return copysign_d(kPiOver2.hi, y);
  if (uy == kInfBits) {
    const DD a = ux == kInfBits ? (x_negative ? add(kPi, neg(kPiOver4)) : kPiOver4) : kPiOver2;
    return copysign_d(a.hi, y);
  }
  if (ux == kInfBits) return copysign_d(x_negative ? kPi.hi : 0.0, y);
  double ay = from_bits(uy), ax = from_bits(ux);
  // Scaled so that the larger lies in [1, 2): exact, as the smaller stays normal or grows.
  const int ey = exponent_of(ay), ex = exponent_of(ax);
  DD a;
  if (ex - ey > 62) {  // atan(ay / ax) = ay / ax within far less than an ulp
    const double t = ay / ax;
    if (!x_negative) return copysign_d(t, y);
    a = add(kPi, -t);
  } else if (ey - ex > 62) {
    a = add(kPiOver2, x_negative ? ax / ay : -(ax / ay));
  } else {
    const int e = ex > ey ? ex : ey;
    ay = scale(ay, -e);
    ax = scale(ax, -e);
    a = angle({ay, 0.0}, {ax, 0.0});
    if (x_negative) a = add(kPi, neg(a));
  }
  return copysign_d(a.hi, y);
}

double lockstep_asin(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u > std::uint64_t{0x3ff0000000000000}) return kNaN64;  // |x| > 1, NaN
  if (u < std::uint64_t{0x3e50000000000000}) return x;       // |x| < 2^-26: asin x rounds to x
  const double a = from_bits(u);
  if (a <= 0.5) return copysign_d(asin_series(a, 0.0).hi, x);
  const DD t = half_root(a);
  const DD v = asin_series(t.hi, t.lo);
  return copysign_d(pi_over_2_minus({2.0 * v.hi, 2.0 * v.lo}).hi, x);  // 2 asin t <= pi/3
}

double lockstep_acos(double x) {
  const std::uint64_t u = bits(x) & kAbs;
  if (u > std::uint64_t{0x3ff0000000000000}) return kNaN64;
  if (x == 1.0) return 0.0;
  if (x == -1.0) return kPi.hi;
  const double a = from_bits(u);
  const bool negative = bits(x) >> 63;
  if (a <= 0.5) {  // pi/2 -+ asin a, asin a <= pi/6
    const DD v = asin_series(a, 0.0);
    return (negative ? add(kPiOver2, v) : pi_over_2_minus(v)).hi;
  }
  const DD t = half_root(a);
  const DD v = asin_series(t.hi, t.lo);  // acos a = 2 asin t, acos(-a) = pi - 2 asin t
  return negative ? add(kPi, DD{-2.0 * v.hi, -2.0 * v.lo}).hi : 2.0 * v.hi;
}

double lockstep_hypot(double x, double y) {
  const std::uint64_t ux = bits(x) & kAbs, uy = bits(y) & kAbs;
  if (ux == kInfBits || uy == kInfBits) return kInf64;
  if (ux > kInfBits || uy > kInfBits) return kNaN64;
  double a = from_bits(ux > uy ? ux : uy), b = from_bits(ux > uy ? uy : ux);
  if (b == 0.0) return a;
  int extra = 0;
  if (a < 0x1p-1000) {  // both tiny: scaled up exactly
    a *= 0x1p600;
    b *= 0x1p600;
    extra = -600;
  }
  const int e = exponent_of(a);
  if (e - exponent_of(b) > 60) return scale(a, extra);  // b^2 / 2a is below a quarter of a's ulp
  a = scale(a, -e);
  b = scale(b, -e);
  const DD s = sqrt_dd(add(two_prod(a, a), two_prod(b, b)));
  return scale(s.hi, e + extra);
}

double lockstep_sqrt(double x) { return x >= 0.0 ? __builtin_sqrt(x) : kNaN64; }  // -0 included

double lockstep_fmod(double x, double y) { return fmod_exact(x, y); }

double lockstep_trunc(double x) { return trunc_exact(x); }
double lockstep_floor(double x) { return floor_exact(x); }
double lockstep_ceil(double x) { return ceil_exact(x); }
double lockstep_round(double x) { return round_exact(x); }
double lockstep_fmin(double x, double y) { return fmin_exact(x, y); }
double lockstep_fmax(double x, double y) { return fmax_exact(x, y); }

}  // extern "C"
