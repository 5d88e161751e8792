"""lockstep's binary64 math (lockstep/detmath.h, lockstep_sin and the rest without the f) for
Python games: the same bits on every machine, within 1 ulp of the exact value, as the C, C++ and C#
games' calls (DetMath's double overloads) give.

Python's floats are binary64, so these take and return them as they are. Python's own math module
calls the platform's libm, whose results differ by library, version and CPU: a simulation calls
these instead (and never ** on floats, which is libm's pow). lockstep.detmath has the binary32
functions, for a state kept in binary32.
"""
import ctypes as C

from . import _lib

_ONE = ["sin", "cos", "tan", "asin", "acos", "atan", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil",
        "round", "trunc"]
_TWO = ["atan2", "pow", "hypot", "fmod", "fmin", "fmax"]
__all__ = _ONE + _TWO + ["sincos"]


def _bind(name, arity):
    f = getattr(_lib, "lockstep_%s" % name)
    f.restype, f.argtypes = C.c_double, [C.c_double] * arity
    return f


for _name in _ONE:
    globals()[_name] = _bind(_name, 1)
for _name in _TWO:
    globals()[_name] = _bind(_name, 2)

_sincos = _lib.lockstep_sincos
_sincos.restype, _sincos.argtypes = None, [C.c_double, C.POINTER(C.c_double), C.POINTER(C.c_double)]


def sincos(x):
    """(sin(x), cos(x)) from one argument reduction."""
    s, c = C.c_double(), C.c_double()
    _sincos(x, C.byref(s), C.byref(c))
    return s.value, c.value
