"""lockstep's binary64 math (lockstep/detmath.h, lockstep_sin and the rest without the f) for
Python games: the same bits on every machine, within 1 ulp of the exact value, as the C, C++ and C#
games' calls (DetMath's double overloads) give.

Python's floats are binary64, so these take and return them as they are. Python's own math module
calls the platform's libm, whose results differ by library, version and CPU: a simulation calls
these instead (and never ** on floats, which is libm's pow). lockstep.detmath has the binary32
functions, for a state kept in binary32.
"""
import ctypes as C

from .detmath import _ONE, _TWO, _bind_all

__all__ = _ONE + _TWO + ["sincos"]

_bind_all(globals(), C.c_double, "")
