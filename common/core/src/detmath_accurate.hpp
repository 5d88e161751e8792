// The accurate paths lockstep's binary32 atan2 and pow take when their binary64 evaluation lands
// too near a rounding boundary to decide it (about one call in 2^22): the same functions in
// double-double arithmetic to about 2^-100 relative (detmath64.cpp), and the float such a value
// rounds to. Internal: not installed, not exported.
#pragma once

namespace lockstep::detmath_accurate {

/// atan2(y, x) for finite, nonzero y and x as hi + *lo (relative error about 2^-100).
double atan2(double y, double x, double* lo);
/// x^y for finite x > 0 and y with |y log x| < 120 (the result well inside the double range), as
/// hi + *lo (relative error about 2^-98).
double pow(double x, double y, double* lo);

}  // namespace lockstep::detmath_accurate
