"""lockstep's math (lockstep/detmath.h) for Python games: binary32 functions that give the same bits
on every machine, as the C, C++ and C# games' calls do.

Python's own math module calls the platform's libm, whose results differ by library, version and
CPU: a simulation must not use it (nor ** on floats, which is libm's pow). Each function here takes
a Python float, rounds it to binary32 first (as a C float parameter does) and returns the binary32
result as a Python float, exactly. Keep a game's state in binary32 with f32() after each operation
when it must match a C or C# port bit for bit; Python's own + - * / on floats are binary64 and
identical everywhere (docs/EMBEDDING.md, "Floats in C# and Python").
"""
import ctypes as C
import struct

from . import _lib

_ONE = ["sin", "cos", "tan", "asin", "acos", "atan", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil",
        "round", "trunc"]
_TWO = ["atan2", "pow", "hypot", "fmod", "fmin", "fmax"]
__all__ = _ONE + _TWO + ["sincos", "f32"]


def f32(x):
    """x rounded to the nearest binary32 (ties to even), as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _bind_all(namespace, ctype, suffix):
    """The functions of one format (C.c_float and "f", or C.c_double and "") into `namespace`:
    each of _ONE and _TWO, and sincos."""
    for arity, names in ((1, _ONE), (2, _TWO)):
        for name in names:
            f = getattr(_lib, "lockstep_%s%s" % (name, suffix))
            f.restype, f.argtypes = ctype, [ctype] * arity
            namespace[name] = f
    both = getattr(_lib, "lockstep_sincos%s" % suffix)
    both.restype, both.argtypes = None, [ctype, C.POINTER(ctype), C.POINTER(ctype)]

    def sincos(x):
        """(sin(x), cos(x)) from one argument reduction."""
        s, c = ctype(), ctype()
        both(x, C.byref(s), C.byref(c))
        return s.value, c.value

    namespace["sincos"] = sincos


_bind_all(globals(), C.c_float, "f")
