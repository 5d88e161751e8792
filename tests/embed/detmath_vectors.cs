// lockstep's math from C# (Lockstep.DetMath): the lines tests/embed/detmath_vectors.c prints.
using System;
using System.Collections.Generic;
using Lockstep;

static class DetMathVectors {
  static uint Bits(float f) { return BitConverter.ToUInt32(BitConverter.GetBytes(f), 0); }
  static float FromBits(uint u) { return BitConverter.ToSingle(BitConverter.GetBytes(u), 0); }

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
    Console.Write(o.ToString());
  }
}
