// lockstep's math from C# (Lockstep.DetMath): the lines tests/embed/detmath_vectors.c prints.
using System;
using System.Collections.Generic;
using Lockstep;

static class DetMathVectors {
  static uint Bits(float f) { return BitConverter.ToUInt32(BitConverter.GetBytes(f), 0); }
  static float FromBits(uint u) { return BitConverter.ToSingle(BitConverter.GetBytes(u), 0); }
  static ulong DBits(double d) { return (ulong)BitConverter.DoubleToInt64Bits(d); }
  static double FromDBits(ulong u) { return BitConverter.Int64BitsToDouble((long)u); }

  static void Binary64(System.Text.StringBuilder o) {
    var ones = new List<KeyValuePair<string, Func<double, double>>> {
      new KeyValuePair<string, Func<double, double>>("sin", DetMath.Sin), new KeyValuePair<string, Func<double, double>>("cos", DetMath.Cos),
      new KeyValuePair<string, Func<double, double>>("tan", DetMath.Tan), new KeyValuePair<string, Func<double, double>>("asin", DetMath.Asin),
      new KeyValuePair<string, Func<double, double>>("acos", DetMath.Acos), new KeyValuePair<string, Func<double, double>>("atan", DetMath.Atan),
      new KeyValuePair<string, Func<double, double>>("exp", DetMath.Exp), new KeyValuePair<string, Func<double, double>>("exp2", DetMath.Exp2),
      new KeyValuePair<string, Func<double, double>>("log", DetMath.Log), new KeyValuePair<string, Func<double, double>>("log2", DetMath.Log2),
      new KeyValuePair<string, Func<double, double>>("sqrt", DetMath.Sqrt), new KeyValuePair<string, Func<double, double>>("floor", DetMath.Floor),
      new KeyValuePair<string, Func<double, double>>("ceil", DetMath.Ceil), new KeyValuePair<string, Func<double, double>>("round", DetMath.Round),
      new KeyValuePair<string, Func<double, double>>("trunc", DetMath.Trunc)};
    var twos = new List<KeyValuePair<string, Func<double, double, double>>> {
      new KeyValuePair<string, Func<double, double, double>>("atan2", DetMath.Atan2), new KeyValuePair<string, Func<double, double, double>>("pow", DetMath.Pow),
      new KeyValuePair<string, Func<double, double, double>>("hypot", DetMath.Hypot), new KeyValuePair<string, Func<double, double, double>>("fmod", DetMath.Fmod),
      new KeyValuePair<string, Func<double, double, double>>("fmin", DetMath.Fmin), new KeyValuePair<string, Func<double, double, double>>("fmax", DetMath.Fmax)};
    var inputs = new List<ulong> {0x0000000000000000ul, 0x8000000000000000ul, 0x3ff0000000000000ul, 0xbff0000000000000ul,
                                  0x7ff0000000000000ul, 0xfff0000000000000ul, 0x0000000000000001ul, 0x7feffffffffffffful,
                                  0x400921fb54442d18ul, 0x3ff921fb54442d18ul, 0x3fe0000000000000ul, 0x40862e42fefa39eful,
                                  0xc0874910d52d3051ul};
    ulong x = 12345ul;
    while (inputs.Count < 300) { x = unchecked(x * 6364136223846793005ul + 1442695040888963407ul); inputs.Add(x); }
    while (inputs.Count < 600) {
      x = unchecked(x * 6364136223846793005ul + 1442695040888963407ul);
      double k = (double)((long)((x >> 11) % 1000000ul) - 500000);
      inputs.Add(DBits(k / 1000.0));
    }
    foreach (var f in ones)
      foreach (ulong u in inputs) o.AppendFormat("{0}64 {1:x16} {2:x16}\n", f.Key, u, DBits(f.Value(FromDBits(u))));
    foreach (var f in twos)
      for (int i = 0; i + 1 < inputs.Count; ++i)
        o.AppendFormat("{0}64 {1:x16} {2:x16} {3:x16}\n", f.Key, inputs[i], inputs[i + 1], DBits(f.Value(FromDBits(inputs[i]), FromDBits(inputs[i + 1]))));
    foreach (ulong u in inputs) {
      double s, c;
      DetMath.SinCos(FromDBits(u), out s, out c);
      o.AppendFormat("sincos64 {0:x16} {1:x16} {2:x16}\n", u, DBits(s), DBits(c));
    }
  }

  static void Main() {
    var ones = new List<KeyValuePair<string, Func<float, float>>> {
      new KeyValuePair<string, Func<float, float>>("sin", DetMath.Sin), new KeyValuePair<string, Func<float, float>>("cos", DetMath.Cos),
      new KeyValuePair<string, Func<float, float>>("tan", DetMath.Tan), new KeyValuePair<string, Func<float, float>>("asin", DetMath.Asin),
      new KeyValuePair<string, Func<float, float>>("acos", DetMath.Acos), new KeyValuePair<string, Func<float, float>>("atan", DetMath.Atan),
      new KeyValuePair<string, Func<float, float>>("exp", DetMath.Exp), new KeyValuePair<string, Func<float, float>>("exp2", DetMath.Exp2),
      new KeyValuePair<string, Func<float, float>>("log", DetMath.Log), new KeyValuePair<string, Func<float, float>>("log2", DetMath.Log2),
      new KeyValuePair<string, Func<float, float>>("sqrt", DetMath.Sqrt), new KeyValuePair<string, Func<float, float>>("floor", DetMath.Floor),
      new KeyValuePair<string, Func<float, float>>("ceil", DetMath.Ceil), new KeyValuePair<string, Func<float, float>>("round", DetMath.Round),
      new KeyValuePair<string, Func<float, float>>("trunc", DetMath.Trunc)};
    var twos = new List<KeyValuePair<string, Func<float, float, float>>> {
      new KeyValuePair<string, Func<float, float, float>>("atan2", DetMath.Atan2), new KeyValuePair<string, Func<float, float, float>>("pow", DetMath.Pow),
      new KeyValuePair<string, Func<float, float, float>>("hypot", DetMath.Hypot), new KeyValuePair<string, Func<float, float, float>>("fmod", DetMath.Fmod),
      new KeyValuePair<string, Func<float, float, float>>("fmin", DetMath.Fmin), new KeyValuePair<string, Func<float, float, float>>("fmax", DetMath.Fmax)};
    var inputs = new List<uint> {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, 0x00000001u,
                                 0x7f7fffffu, 0x40490fdbu, 0x3fc90fdbu, 0x3f000000u, 0x42b17218u, 0xc2cff1b5u};
    uint x = 12345u;
    while (inputs.Count < 300) { x = unchecked(x * 1664525u + 1013904223u); inputs.Add(x); }
    while (inputs.Count < 600) {
      x = unchecked(x * 1664525u + 1013904223u);
      // Each step rounded to float by its cast, as the C program's float arithmetic does.
      float k = (float)((int)(x % 1000000u) - 500000);
      inputs.Add(Bits((float)(k / 1000.0f)));
    }
    var o = new System.Text.StringBuilder();
    foreach (var f in ones)
      foreach (uint u in inputs) o.AppendFormat("{0} {1:x8} {2:x8}\n", f.Key, u, Bits(f.Value(FromBits(u))));
    foreach (var f in twos)
      for (int i = 0; i + 1 < inputs.Count; ++i)
        o.AppendFormat("{0} {1:x8} {2:x8} {3:x8}\n", f.Key, inputs[i], inputs[i + 1], Bits(f.Value(FromBits(inputs[i]), FromBits(inputs[i + 1]))));
    foreach (uint u in inputs) {
      float s, c;
      DetMath.SinCos(FromBits(u), out s, out c);
      o.AppendFormat("sincos {0:x8} {1:x8} {2:x8}\n", u, Bits(s), Bits(c));
    }
    Binary64(o);
    Console.Write(o.ToString());
  }
}
