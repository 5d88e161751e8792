"""lockstep's math from Python (lockstep.detmath): the lines tests/embed/detmath_vectors.c prints."""
import struct

from lockstep import detmath, detmath64


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

# binary64: the same functions on 600 doubles
def dbits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def from_dbits(u):
    return struct.unpack("<d", struct.pack("<Q", u))[0]


M = (1 << 64) - 1
dinputs = [0x0000000000000000, 0x8000000000000000, 0x3ff0000000000000, 0xbff0000000000000, 0x7ff0000000000000,
           0xfff0000000000000, 0x0000000000000001, 0x7fefffffffffffff, 0x400921fb54442d18, 0x3ff921fb54442d18,
           0x3fe0000000000000, 0x40862e42fefa39ef, 0xc0874910d52d3051]
x = 12345
while len(dinputs) < 300:
    x = (x * 6364136223846793005 + 1442695040888963407) & M
    dinputs.append(x)
while len(dinputs) < 600:
    x = (x * 6364136223846793005 + 1442695040888963407) & M
    dinputs.append(dbits(float((x >> 11) % 1000000 - 500000) / 1000.0))
for name in ones:
    f = getattr(detmath64, name)
    out += ["%s64 %016x %016x" % (name, u, dbits(f(from_dbits(u)))) for u in dinputs]
for name in twos:
    f = getattr(detmath64, name)
    out += ["%s64 %016x %016x %016x" % (name, a, b, dbits(f(from_dbits(a), from_dbits(b)))) for a, b in zip(dinputs, dinputs[1:])]
for u in dinputs:
    s, c = detmath64.sincos(from_dbits(u))
    out.append("sincos64 %016x %016x %016x" % (u, dbits(s), dbits(c)))
print("\n".join(out))
