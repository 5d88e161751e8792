// A game in C# that joins a session through lockstep's C# binding (bindings/csharp/Lockstep.cs,
// P/Invoke over liblockstep_net.so, as Unity loads a native plugin), owning its state (mode b): a
// walkers world written in C# from tests/modules/walkers.c's rules, stepped by the game itself.
// Usage: cs_player.exe HOST PORT NAME SEED HASH_LOG BUILD_ID [--predict N] [--raise-at T]
//        cs_player.exe --compare MODULE.so [--drift-at T]
//        cs_player.exe --bisect MODULE.so REPLAY [--drift-at T]
//        cs_player.exe --compare-trace TRACE BUILD_ID [--drift-at T] [--float-rule]
//        cs_player.exe --trace-write TRACE BUILD_ID [--float-rule]
// --compare runs this game beside the module (Lockstep.Client.CompareGame) and prints the report
// (exit 0: equal, 3: they differ); --drift-at T rounds the damping the other way from tick T on.
// --float-rule adds a rule in float arithmetic without the casts docs/EMBEDDING.md asks for
// (f * 1.1f less the same product stored in a float: zero in float arithmetic, not where the
// runtime keeps the product wider), which Mono's default (float32 on) and -O=-float32 evaluate
// differently: the determinism gate's Mono legs must tell them apart.
// --predict N predicts up to N ticks ahead on the game's one state: each frame it draws, the game
// checks that its own state is the predicted world's tick, and at the end it prints the
// prediction figures as the C and Python games do. --raise-at T throws in the game's Step at tick
// T (the session must end with exit 1 and an Ended event, the other players untouched). Exits
// with the session's exit code.
using System;
using System.Collections.Generic;
using System.Threading;

sealed class Walkers {
  const int World = 100000;
  public uint Tick, Players;
  public ulong Seed, Pulse;
  public int[] Pos, Vel;

  public static ulong Mix(ulong x) {
    unchecked {
      x ^= x >> 30;
      x *= 0xBF58476D1CE4E5B9UL;
      x ^= x >> 27;
      x *= 0x94D049BB133111EBUL;
      return x ^ (x >> 31);
    }
  }

  public Walkers(byte[] settings, uint players) {
    Seed = settings.Length == 0 ? 1UL : BitConverter.ToUInt64(settings, 0);
    Players = players;
    Pulse = Mix(Seed);
    Pos = new int[players];
    Vel = new int[players];
    for (uint p = 0; p < players; ++p) Pos[p] = (int)(Mix(unchecked(Seed + p)) % World);
  }

  public void Step(Lockstep.Frame f) {
    unchecked {
      Pulse = Mix(Pulse + f.Tick);
      for (int p = 0; p < Players; ++p) {
        int push = 0;
        if (((f.Present >> p) & 1) != 0 && f.Inputs[p].Length > 0) push = (sbyte)f.Inputs[p][0];
        Vel[p] = (int)((long)Vel[p] * 15 / 16 + push);
        Pos[p] = (int)((long)Pos[p] + Vel[p] + (long)((Pulse >> (60 - (p % 4))) % 5) - 2);
        if (Pos[p] < 0) { Pos[p] = 0; Vel[p] = -Vel[p]; }
        if (Pos[p] > World) { Pos[p] = World; Vel[p] = -Vel[p]; }
      }
      for (int i = 0; i < f.Commands.Length; ++i) {
        byte[] c = f.Commands[i];
        uint slot = f.CommandSlots[i];
        if (slot < Players && c.Length == 2 && c[0] == (byte)'J' && c[1] <= 50) Pos[slot] = (int)((long)Pos[slot] + c[1]);
      }
    }
    Tick = f.Tick;
  }

  public byte[] Save() {
    var b = new byte[24 + Players * 8];
    BitConverter.GetBytes(Tick).CopyTo(b, 0);
    BitConverter.GetBytes(Players).CopyTo(b, 4);
    BitConverter.GetBytes(Seed).CopyTo(b, 8);
    BitConverter.GetBytes(Pulse).CopyTo(b, 16);
    for (int p = 0; p < Players; ++p) {
      BitConverter.GetBytes(Pos[p]).CopyTo(b, 24 + p * 8);
      BitConverter.GetBytes(Vel[p]).CopyTo(b, 28 + p * 8);
    }
    return b;
  }

  public static Walkers Load(byte[] b) {  // untrusted bytes: every length checked
    if (b.Length < 24) return null;
    uint players = BitConverter.ToUInt32(b, 4);
    if (players < 1 || players > 32 || b.Length != 24 + players * 8) return null;
    var w = new Walkers(new byte[0], players);
    w.Tick = BitConverter.ToUInt32(b, 0);
    w.Seed = BitConverter.ToUInt64(b, 8);
    w.Pulse = BitConverter.ToUInt64(b, 16);
    for (int p = 0; p < players; ++p) {
      w.Pos[p] = BitConverter.ToInt32(b, 24 + p * 8);
      w.Vel[p] = BitConverter.ToInt32(b, 28 + p * 8);
    }
    return w;
  }
}

sealed class WalkersGame : Lockstep.Game {
  public Walkers World = new Walkers(new byte[0], 1);
  public uint RaiseAt, DriftAt;
  public bool FloatRule;
  public WalkersGame(ulong buildId) { Name = "walkers"; Version = 1; BuildId = buildId; InputSize = 2; }
  public override void Reset(byte[] settings, uint players) { World = new Walkers(settings, players); }
  public override void Step(Lockstep.Frame frame) {
    if (frame.Tick == RaiseAt) throw new InvalidOperationException("the game broke at tick " + frame.Tick);
    World.Step(frame);
    if (DriftAt > 0 && frame.Tick >= DriftAt && World.Vel[0] < 0) World.Vel[0] += 1;
    if (FloatRule) {  // zero in float arithmetic; not where the product is kept wider than a float
      float f = World.Pos[0] / 7f;
      float p = f * 1.1f;
      if (f * 1.1f - p != 0f) World.Vel[0] += 1;
    }
  }
  public override byte[] Save() { return World.Save(); }
  public override bool Load(byte[] state) {
    var w = Walkers.Load(state);
    if (w == null) return false;
    World = w;
    return true;
  }
  public override uint TickOf(byte[] state) { var w = Walkers.Load(state); return w == null ? 0 : w.Tick; }
  public override uint EntityCount(byte[] state) { var w = Walkers.Load(state); return w == null ? 0 : w.Players; }
  public override List<KeyValuePair<string, KeyValuePair<uint, ulong>>> Fields(byte[] state, uint entity) {
    var w = Walkers.Load(state);
    var f = new List<KeyValuePair<string, KeyValuePair<uint, ulong>>>();
    if (w == null) return f;
    if (entity == uint.MaxValue) {
      f.Add(new KeyValuePair<string, KeyValuePair<uint, ulong>>("tick", new KeyValuePair<uint, ulong>(2, w.Tick)));
      f.Add(new KeyValuePair<string, KeyValuePair<uint, ulong>>("pulse", new KeyValuePair<uint, ulong>(3, w.Pulse)));
    } else if (entity < w.Players) {
      f.Add(new KeyValuePair<string, KeyValuePair<uint, ulong>>("pos", new KeyValuePair<uint, ulong>(2, unchecked((uint)w.Pos[entity]))));
      f.Add(new KeyValuePair<string, KeyValuePair<uint, ulong>>("vel", new KeyValuePair<uint, ulong>(2, unchecked((uint)w.Vel[entity]))));
    }
    return f;
  }
}

// A game that allocates nothing per step: its state is one array stepped in place, and Save
// returns that same array (the binding copies it at once). With it, what the garbage collector
// sees over many steps is the binding's own allocation (cs_player.exe --alloc-check).
sealed class CounterGame : Lockstep.Game {
  readonly byte[] state = new byte[16];
  public CounterGame() { Name = "counter"; Version = 1; BuildId = 1; InputSize = 2; }
  public override void Reset(byte[] settings, uint players) { Array.Clear(state, 0, state.Length); }
  public override void Step(Lockstep.Frame f) {
    uint sum = 0;
    for (int p = 0; p < f.Players; ++p) sum += f.Inputs[p][0];
    for (int i = 0; i < f.Commands.Length; ++i) sum += (uint)f.Commands[i].Length;
    Put(0, f.Tick);
    Put(4, Get(4) * 31 + sum);
  }
  public override byte[] Save() { return state; }
  public override bool Load(byte[] s) {
    if (s.Length != state.Length) return false;
    Buffer.BlockCopy(s, 0, state, 0, s.Length);
    return true;
  }
  public override uint TickOf(byte[] s) { return s.Length >= 4 ? (uint)(s[0] | s[1] << 8 | s[2] << 16 | s[3] << 24) : 0; }
  uint Get(int at) { return (uint)(state[at] | state[at + 1] << 8 | state[at + 2] << 16 | state[at + 3] << 24); }
  void Put(int at, uint v) {
    for (int i = 0; i < 4; ++i) state[at + i] = (byte)(v >> (8 * i));
  }
}

static class Program {
  static int Main(string[] args) {
    if (args.Length >= 2 && args[0] == "--compare") {
      var module = Lockstep.Client.ModuleLoad(args[1]);
      var g = new WalkersGame(module.BuildId);
      if (args.Length >= 4 && args[2] == "--drift-at") g.DriftAt = uint.Parse(args[3]);
      string report;
      bool equal = Lockstep.Client.CompareGame(module, g, 400, out report);
      Console.WriteLine("cs_player: compare: " + report);
      return equal ? 0 : 3;
    }
    // The binding's allocation per step: a game that allocates nothing, traced over ticks x 3
    // variants (1, 2 and 4 players) through the same callbacks a session uses.
    if (args.Length >= 3 && args[0] == "--alloc-check") {
      uint ticks = uint.Parse(args[2]);
      var g = new CounterGame();
      Lockstep.Client.TraceGame(g, args[1], 10, 4);  // warm: the binding's first-use checks, the JIT
      int before = GC.CollectionCount(0);
      long bytesBefore = GC.GetTotalMemory(false);
      Lockstep.Client.TraceGame(g, args[1], ticks, 4);
      Console.WriteLine(string.Format("cs_player: alloc-check: {0} steps, {1} gen-0 collections, {2} KiB more on the heap",
                                      ticks * 3, GC.CollectionCount(0) - before, (GC.GetTotalMemory(false) - bytesBefore) / 1024));
      return 0;
    }
    // The log sink: a client that joins (MODULE's server at PORT) logs it into the game's own sink.
    if (args.Length >= 3 && args[0] == "--log-check") {
      var lines = new List<string>();
      var opts = new Lockstep.ClientOptions { Port = ushort.Parse(args[1]), Name = "logger", Module = Lockstep.Client.ModuleLoad(args[2]).Handle,
                                              Log = (level, line) => { lock (lines) lines.Add(level + " " + line); } };
      using (var c = new Lockstep.Client(opts)) {
        long until = Lockstep.Client.NowNs() + 10000000000L;
        bool left = false;
        while (!c.Finished && Lockstep.Client.NowNs() < until) {
          c.Update(Lockstep.Client.NowNs());
          lock (lines) if (lines.Count > 0 && !left) { c.Leave(); left = true; }
          Thread.Sleep(5);
        }
        Console.WriteLine(string.Format("cs_player: log-check: exit {0}, {1} lines into the sink; first: {2}", c.ExitCode, lines.Count,
                                        lines.Count > 0 ? lines[0] : "none"));
      }
      return 0;
    }
    // Two implementations with no module: this game against a trace another one wrote (C, Python).
    if (args.Length >= 3 && (args[0] == "--compare-trace" || args[0] == "--trace-write")) {
      string hex = args[2].StartsWith("0x") ? args[2].Substring(2) : args[2];
      var g = new WalkersGame(ulong.Parse(hex, System.Globalization.NumberStyles.HexNumber));
      for (int i = 3; i < args.Length; ++i) {
        if (args[i] == "--drift-at" && i + 1 < args.Length) g.DriftAt = uint.Parse(args[++i]);
        else if (args[i] == "--float-rule") g.FloatRule = true;
      }
      if (args[0] == "--trace-write") {
        Console.WriteLine("cs_player: trace: " + Lockstep.Client.TraceGame(g, args[1], 400, 4));
        return 0;
      }
      string report;
      bool equal = Lockstep.Client.CompareTrace(g, args[1], out report);
      Console.WriteLine("cs_player: compare-trace: " + report);
      return equal ? 0 : 3;
    }
    if (args.Length >= 3 && args[0] == "--bisect") {
      var module = Lockstep.Client.ModuleLoad(args[1]);
      var g = new WalkersGame(module.BuildId);
      if (args.Length >= 5 && args[3] == "--drift-at") g.DriftAt = uint.Parse(args[4]);
      string report;
      bool equal = Lockstep.Client.BisectGame(module, g, args[2], out report);
      Console.WriteLine("cs_player: bisect: " + report);
      return equal ? 0 : 3;
    }
    if (args.Length < 6) {
      Console.Error.WriteLine("usage: cs_player.exe HOST PORT NAME SEED HASH_LOG BUILD_ID [--predict N] [--raise-at T]");
      return 2;
    }
    uint predict = 0, raiseAt = 0;
    for (int i = 6; i + 1 < args.Length; i += 2) {
      if (args[i] == "--predict") predict = uint.Parse(args[i + 1]);
      if (args[i] == "--raise-at") raiseAt = uint.Parse(args[i + 1]);
    }
    ulong seed = ulong.Parse(args[3]);
    string id = args[5].StartsWith("0x") ? args[5].Substring(2) : args[5];
    var game = new WalkersGame(Convert.ToUInt64(id, 16)) { RaiseAt = raiseAt };
    // Bad arguments are the language's own errors, with lockstep's sentence.
    try {
      new Lockstep.Client(new Lockstep.ClientOptions { Name = "a\tb", Game = game });
      Console.Error.WriteLine("cs_player: a bad name was taken");
      return 2;
    } catch (Lockstep.LockstepException e) {
      Console.Error.WriteLine("cs_player: refused as it should be: " + e.Message);
    }
    using (var client = new Lockstep.Client(new Lockstep.ClientOptions {
             Host = args[0], Port = ushort.Parse(args[1]), Name = args[2], Game = game, HashLog = args[4], Predict = predict })) {
      try {
        client.SetInput(new byte[3]);  // longer than the game's 2 bytes
        Console.Error.WriteLine("cs_player: a too-long input was taken");
        return 2;
      } catch (Lockstep.LockstepException) {
      }
      long draws = 0, notPredicted = 0, ahead = 0;
      uint lowestDepth = predict;  // after the first 3 s
      var input = new byte[2];
      while (!client.Finished) {
        long now = Lockstep.Client.NowNs();
        client.Update(now);
        foreach (var e in client.PollEvents()) Console.Error.WriteLine("cs_player: event " + (uint)e.Kind + " " + e);
        var st = client.Stats;
        if (predict > 0 && st.Tick > 300) lowestDepth = Math.Min(lowestDepth, st.Predict);
        ulong h = Walkers.Mix(unchecked(seed * 31 + st.Tick / 50));
        input[0] = unchecked((byte)(sbyte)((long)(h % 61) - 30));
        client.SetInput(input);
        if (predict > 0) {  // where a game would draw: its own state, which must be the predicted world
          client.PredictedAlpha(now);
          if (st.Tick > 0) {
            ++draws;
            if (game.World.Tick != st.PredictedTick) ++notPredicted;
            if (st.PredictedTick > st.Tick) ++ahead;
          }
        } else {
          client.Alpha(now);
        }
        Thread.Sleep(4);
      }
      var s = client.Stats;
      int code = client.ExitCode;
      Console.Error.WriteLine(string.Format("cs_player: ended at tick {0}, exit {1}, rtt {2} ms, {3} of {4} frames at alpha 1",
                                            s.Tick, code, s.RttMs, s.FramesClamped, s.FramesDrawn));
      if (client.CallbackError != null) Console.Error.WriteLine("cs_player: the game threw: " + client.CallbackError.Message);
      if (predict > 0) {
        double n = Math.Max(1, s.Tick);
        Console.Error.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture,
            "cs_player: prediction: {0} draws, {1} not of the predicted world, {2} ahead of the confirmed one; input to screen p50 {3:F1} ms p99 {4:F1} ms; " +
            "depth {5} (lowest {13}), {6} rebuilds, {7} of {8} predictions wrong; per confirmed tick: {9:F2} steps, {10:F2} saves, {11:F3} loads, {12:F2} reused",
            draws, notPredicted, ahead, s.InputToScreenP50Ms, s.InputToScreenP99Ms, s.Predict, s.Rebuilds, s.Mispredictions,
            s.VerifiedPredictions, s.GameSteps / n, s.GameSaves / n, s.GameLoads / n, s.GameReused / n, lowestDepth));
      }
      return code;
    }
  }
}
