"""lockstep's math from Python (lockstep.detmath): the lines tests/embed/detmath_vectors.c prints."""
import struct

from lockstep import detmath


def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def from_bits(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


ones = ["sin", "cos", "tan", "asin", "acos", "atan", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil", "round", "trunc"]
twos = ["atan2", "pow", "hypot", "fmod", "fmin", "fmax"]
inputs = [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000, 0x00000001, 0x7f7fffff, 0x40490fdb,
          0x3fc90fdb, 0x3f000000, 0x42b17218, 0xc2cff1b5]
x = 12345
while len(inputs) < 300:
    x = (x * 1664525 + 1013904223) & 0xffffffff
    inputs.append(x)
while len(inputs) < 600:
    x = (x * 1664525 + 1013904223) & 0xffffffff
    inputs.append(bits(detmath.f32(detmath.f32(float(x % 1000000 - 500000)) / 1000.0)))
out = []
for name in ones:
    f = getattr(detmath, name)
    out += ["%s %08x %08x" % (name, u, bits(f(from_bits(u)))) for u in inputs]
for name in twos:
    f = getattr(detmath, name)
    out += ["%s %08x %08x %08x" % (name, a, b, bits(f(from_bits(a), from_bits(b)))) for a, b in zip(inputs, inputs[1:])]
for u in inputs:
    s, c = detmath.sincos(from_bits(u))
    out.append("sincos %08x %08x %08x" % (u, bits(s), bits(c)))
print("\n".join(out))
