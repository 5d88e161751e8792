// lockstep for C#: join a lockstep session from a game's own loop, through the C session API
// (lockstep_session.h) by P/Invoke, as Unity and Godot (mono) load a native plugin. One source
// file: drop it into the project beside liblockstep_net.so (and liblockstep_core.so, which it
// finds beside itself). docs/EMBEDDING.md, "C#".
//
//   var client = new Lockstep.Client(new Lockstep.ClientOptions { Host = "127.0.0.1", Port = 7777,
//                                                                  Name = "me", Game = myGame });
//   while (!client.Finished) {
//     client.Update(Lockstep.Client.NowNs());
//     foreach (var e in client.PollEvents()) { ... }
//     client.SetInput(input);
//     Draw(client.Alpha(Lockstep.Client.NowNs()));
//   }
//
// Callbacks are static methods (as IL2CPP's reverse P/Invoke needs), held in static fields for the
// life of the process; the client reaches its Game through a GCHandle passed as `user`. At first
// use the binding holds its struct layouts to the library's (lockstep_layout) and throws a
// LockstepException on any difference: a binding of another version cannot corrupt memory. A call
// the library refuses throws a LockstepException (an ArgumentException) with the library's
// sentence. A Game method that throws ends this client's session with exit code 1 and an Ended
// event; the exception is kept in Client.CallbackError. The other players are not touched.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

#if !UNITY_5_3_OR_NEWER
namespace AOT {
/// Marks a static method native code calls back (Unity defines it; here for other runtimes).
[AttributeUsage(AttributeTargets.Method)]
public sealed class MonoPInvokeCallbackAttribute : Attribute {
  public MonoPInvokeCallbackAttribute(Type type) { }
}
}
#endif

namespace Lockstep {

/// lockstep's math (lockstep/detmath.h): binary32 functions with the same bits on every machine, as
/// the C, C++ and Python games' calls, and binary64 overloads of each (within 1 ulp, identical
/// everywhere). System.Math and MathF call the runtime's libm (or its JIT's
/// intrinsics), which differ by platform: a simulation calls these instead. Mono with its float32
/// optimization off (-O=-float32, older Monos' default) keeps float intermediates in double
/// precision: round each one with an explicit
/// (float) cast (docs/EMBEDDING.md, "Floats in C# and Python").
public static class DetMath {
  const string Lib = "lockstep_net";
  [DllImport(Lib, EntryPoint = "lockstep_sinf")] public static extern float Sin(float x);
  [DllImport(Lib, EntryPoint = "lockstep_cosf")] public static extern float Cos(float x);
  [DllImport(Lib, EntryPoint = "lockstep_tanf")] public static extern float Tan(float x);
  [DllImport(Lib, EntryPoint = "lockstep_asinf")] public static extern float Asin(float x);
  [DllImport(Lib, EntryPoint = "lockstep_acosf")] public static extern float Acos(float x);
  [DllImport(Lib, EntryPoint = "lockstep_atanf")] public static extern float Atan(float x);
  [DllImport(Lib, EntryPoint = "lockstep_expf")] public static extern float Exp(float x);
  [DllImport(Lib, EntryPoint = "lockstep_exp2f")] public static extern float Exp2(float x);
  [DllImport(Lib, EntryPoint = "lockstep_logf")] public static extern float Log(float x);
  [DllImport(Lib, EntryPoint = "lockstep_log2f")] public static extern float Log2(float x);
  [DllImport(Lib, EntryPoint = "lockstep_sqrtf")] public static extern float Sqrt(float x);
  [DllImport(Lib, EntryPoint = "lockstep_floorf")] public static extern float Floor(float x);
  [DllImport(Lib, EntryPoint = "lockstep_ceilf")] public static extern float Ceil(float x);
  [DllImport(Lib, EntryPoint = "lockstep_roundf")] public static extern float Round(float x);
  [DllImport(Lib, EntryPoint = "lockstep_truncf")] public static extern float Trunc(float x);
  [DllImport(Lib, EntryPoint = "lockstep_atan2f")] public static extern float Atan2(float y, float x);
  [DllImport(Lib, EntryPoint = "lockstep_powf")] public static extern float Pow(float x, float y);
  [DllImport(Lib, EntryPoint = "lockstep_hypotf")] public static extern float Hypot(float x, float y);
  [DllImport(Lib, EntryPoint = "lockstep_fmodf")] public static extern float Fmod(float x, float y);
  [DllImport(Lib, EntryPoint = "lockstep_fminf")] public static extern float Fmin(float x, float y);
  [DllImport(Lib, EntryPoint = "lockstep_fmaxf")] public static extern float Fmax(float x, float y);
  [DllImport(Lib, EntryPoint = "lockstep_sincosf")] public static extern void SinCos(float x, out float sin, out float cos);
  // binary64: the same functions on doubles (lockstep_sin, ...), within 1 ulp and identical everywhere.
  [DllImport(Lib, EntryPoint = "lockstep_sin")] public static extern double Sin(double x);
  [DllImport(Lib, EntryPoint = "lockstep_cos")] public static extern double Cos(double x);
  [DllImport(Lib, EntryPoint = "lockstep_tan")] public static extern double Tan(double x);
  [DllImport(Lib, EntryPoint = "lockstep_asin")] public static extern double Asin(double x);
  [DllImport(Lib, EntryPoint = "lockstep_acos")] public static extern double Acos(double x);
  [DllImport(Lib, EntryPoint = "lockstep_atan")] public static extern double Atan(double x);
  [DllImport(Lib, EntryPoint = "lockstep_exp")] public static extern double Exp(double x);
  [DllImport(Lib, EntryPoint = "lockstep_exp2")] public static extern double Exp2(double x);
  [DllImport(Lib, EntryPoint = "lockstep_log")] public static extern double Log(double x);
  [DllImport(Lib, EntryPoint = "lockstep_log2")] public static extern double Log2(double x);
  [DllImport(Lib, EntryPoint = "lockstep_sqrt")] public static extern double Sqrt(double x);
  [DllImport(Lib, EntryPoint = "lockstep_floor")] public static extern double Floor(double x);
  [DllImport(Lib, EntryPoint = "lockstep_ceil")] public static extern double Ceil(double x);
  [DllImport(Lib, EntryPoint = "lockstep_round")] public static extern double Round(double x);
  [DllImport(Lib, EntryPoint = "lockstep_trunc")] public static extern double Trunc(double x);
  [DllImport(Lib, EntryPoint = "lockstep_atan2")] public static extern double Atan2(double y, double x);
  [DllImport(Lib, EntryPoint = "lockstep_pow")] public static extern double Pow(double x, double y);
  [DllImport(Lib, EntryPoint = "lockstep_hypot")] public static extern double Hypot(double x, double y);
  [DllImport(Lib, EntryPoint = "lockstep_fmod")] public static extern double Fmod(double x, double y);
  [DllImport(Lib, EntryPoint = "lockstep_fmin")] public static extern double Fmin(double x, double y);
  [DllImport(Lib, EntryPoint = "lockstep_fmax")] public static extern double Fmax(double x, double y);
  [DllImport(Lib, EntryPoint = "lockstep_sincos")] public static extern void SinCos(double x, out double sin, out double cos);
}

public enum EventKind : uint { Joined = 1, Started, PlayerJoined, PlayerLeft, Desync, Resynced, Kicked, Ended }

/// A call the library refused: Code is its lockstep_status, Message its sentence.
public sealed class LockstepException : ArgumentException {
  public readonly int Code;
  public LockstepException(int code, string sentence) : base(sentence) { Code = code; }
}

/// One confirmed (or predicted) frame: Tick is the tick it makes.
public sealed class Frame {
  public uint Tick, Present, Filled, Players;
  public byte[][] Inputs;        // one per player, input size bytes each
  public uint[] CommandSlots;    // the commands, in slot order
  public byte[][] Commands;
}

public sealed class Event {
  public EventKind Kind;
  public uint Tick;
  public int Slot, Code;
  public string Name, Detail;
  public override string ToString() { return string.Format("{0} tick {1} slot {2} code {3} {4} {5}", Kind, Tick, Slot, Code, Name, Detail); }
}

/// A game that owns its state (mode b): the hosted module's identity, and its one state saved,
/// loaded and stepped on lockstep's request. Fields: kind 0 f32, 1 f64, 2 u32, 3 u64 (bits).
/// Without garbage: the Frame given to Step and the arrays given to TickOf, EntityCount and Fields
/// are lent for the call and reused; Save's array is copied at once, so a game may return the
/// same buffer every time. Load's array is the game's to keep.
public abstract class Game {
  public string Name = "";
  public uint Version = 1;
  public ulong BuildId;
  public uint InputSize;
  public abstract void Reset(byte[] settings, uint players);
  public abstract void Step(Frame frame);
  public abstract byte[] Save();
  public abstract bool Load(byte[] state);
  public abstract uint TickOf(byte[] state);
  public virtual uint EntityCount(byte[] state) { return 0; }
  public virtual List<KeyValuePair<string, KeyValuePair<uint, ulong>>> Fields(byte[] state, uint entity) { return null; }
}

public sealed class ClientOptions {
  public string Host = "127.0.0.1";
  public ushort Port = 7777;
  public string Name = "player";
  public string Token;
  public bool Spectate;
  public string RejoinSecret;
  public uint LastTick;
  public Game Game;              // mode (b); or Module
  public IntPtr Module;          // mode (a): from Client.ModuleLoad / ModuleBuiltin
  public string HashLog;
  public long ConnectTimeoutMs = 20000, PlayoutMaxMs = 150;
  public uint Predict;
  public byte[] ConnectToken;
  public double StepBudgetMs;    // 0: adaptive (lockstep_session.h, config.step_budget_us)
  /// Every line the library logs (level 0 debug .. 3 error) instead of stderr; null: stderr. One
  /// sink per process: the client created last sets it.
  public Action<int, string> Log;
}

[StructLayout(LayoutKind.Sequential)]
public struct Stats {
  public uint StructSize, Tick;
  public int Slot;
  public uint RttMs, JitterMs;
  public double Loss, LeadMs, PlayoutMs;
  public uint FramesBehind;
  public ulong InputsFilled, FramesDrawn, FramesClamped, Hash;
  public double InputToScreenP50Ms, InputToScreenP99Ms;
  public uint Predict, PredictedTick;
  public ulong PredictedTicks, Rebuilds, VerifiedPredictions, Mispredictions;
  public ulong GameSteps, GameSaves, GameLoads, GameReused;
  public double StepBudgetMs, StepCostUs, FrameMs;
}

internal static class Native {
  const string Lib = "lockstep_net";
  public const uint ApiVersion = 4;

  [StructLayout(LayoutKind.Sequential)] public struct Command { public uint Slot, Size; public IntPtr Bytes; }
  [StructLayout(LayoutKind.Sequential)]
  public struct FrameC {
    public uint Tick, Present, Filled, Players, InputSize;
    public IntPtr Inputs;
    public uint CommandCount;
    public IntPtr Commands;
  }
  [StructLayout(LayoutKind.Sequential)] public struct Field { public IntPtr Name; public uint Kind; public ulong Bits; }

  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate int ResetFn(IntPtr user, IntPtr settings, UIntPtr n, uint players);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate int StepFn(IntPtr user, IntPtr frame);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate UIntPtr SaveFn(IntPtr user, IntPtr outp, UIntPtr cap);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate int LoadFn(IntPtr user, IntPtr bytes, UIntPtr n);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate uint TickFn(IntPtr user, IntPtr state, UIntPtr n);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate void LogFn(IntPtr user, int level, IntPtr line);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)] public delegate UIntPtr FieldsFn(IntPtr user, IntPtr state, UIntPtr n, uint entity, IntPtr outp, UIntPtr cap);

  [StructLayout(LayoutKind.Sequential)]
  public struct GameC {
    public uint StructSize;
    public IntPtr User, Name;
    public uint Version;
    public ulong BuildId;
    public uint InputSize;
    public IntPtr Reset, Step, Save, Load, Tick, EntityCount, Fields;
  }
  [StructLayout(LayoutKind.Sequential)]
  public struct Config {
    public uint StructSize;
    public IntPtr Host;
    public ushort Port;
    public IntPtr Name, Token;
    public int Spectate;
    public IntPtr RejoinSecret;
    public uint LastTick;
    public IntPtr Module, Game, Log, LogUser, HashLog;
    public long ConnectTimeoutMs, PlayoutMaxMs;
    public uint Predict;
    public IntPtr ConnectToken;
    public UIntPtr ConnectTokenLen;
    public long StepBudgetUs;
  }
  [StructLayout(LayoutKind.Sequential)]
  public struct EventC {
    public uint StructSize, Kind, Tick;
    public int Slot, Code;
    [MarshalAs(UnmanagedType.ByValArray, SizeConst = 33)] public byte[] Name;
    [MarshalAs(UnmanagedType.ByValArray, SizeConst = 256)] public byte[] Detail;
  }

  [DllImport(Lib)] public static extern uint lockstep_api_version();
  [DllImport(Lib)] public static extern int lockstep_layout(string structName, string field, out UIntPtr offset, out UIntPtr size);
  [DllImport(Lib)] public static extern long lockstep_now_ns();
  [DllImport(Lib)] public static extern int lockstep_module_builtin(string name, out IntPtr module, StringBuilder error, UIntPtr cap);
  [DllImport(Lib)] public static extern int lockstep_module_load(string path, out IntPtr module, StringBuilder error, UIntPtr cap);
  [DllImport(Lib)] public static extern IntPtr lockstep_module_name(IntPtr module);
  [DllImport(Lib)] public static extern uint lockstep_module_version(IntPtr module);
  [DllImport(Lib)] public static extern ulong lockstep_module_build_id(IntPtr module);
  [DllImport(Lib)] public static extern uint lockstep_module_input_size(IntPtr module);
  [DllImport(Lib)] public static extern void lockstep_client_config_init(ref Config config, UIntPtr size);
  [DllImport(Lib)] public static extern void lockstep_game_init(ref GameC game, UIntPtr size);
  [DllImport(Lib)] public static extern int lockstep_client_create(ref Config config, out IntPtr client, StringBuilder error, UIntPtr cap);
  [DllImport(Lib)] public static extern void lockstep_client_destroy(IntPtr client);
  [DllImport(Lib)] public static extern long lockstep_client_update(IntPtr client, long nowNs);
  [DllImport(Lib)] public static extern int lockstep_client_set_input(IntPtr client, byte[] input, UIntPtr n);
  [DllImport(Lib)] public static extern int lockstep_client_add_command(IntPtr client, byte[] bytes, UIntPtr n);
  [DllImport(Lib)] public static extern int lockstep_client_set_result(IntPtr client, byte[] bytes, UIntPtr n);
  [DllImport(Lib)] public static extern int lockstep_client_next_event(IntPtr client, ref EventC e);
  [DllImport(Lib)] public static extern double lockstep_client_alpha(IntPtr client, long nowNs);
  [DllImport(Lib)] public static extern double lockstep_client_predicted_alpha(IntPtr client, long nowNs);
  [DllImport(Lib)] public static extern int lockstep_client_stats_get(IntPtr client, ref Stats stats);
  [DllImport(Lib)] public static extern void lockstep_client_presented(IntPtr client, long nowNs);
  [DllImport(Lib)] public static extern IntPtr lockstep_client_error(IntPtr client);
  [DllImport(Lib)] public static extern void lockstep_client_callback_failed(IntPtr client, byte[] why);
  [DllImport(Lib)] public static extern void lockstep_client_start_service(IntPtr client);
  [DllImport(Lib)] public static extern int lockstep_client_finished(IntPtr client);
  [DllImport(Lib)] public static extern int lockstep_client_exit_code(IntPtr client);
  [DllImport(Lib)] public static extern void lockstep_client_leave(IntPtr client);
  [DllImport(Lib)] public static extern int lockstep_compare_game_v4(IntPtr module, IntPtr game, byte[] settings, UIntPtr n, uint ticks,
                                                                  StringBuilder report, UIntPtr cap);
  [DllImport(Lib)] public static extern int lockstep_game_trace_write_v4(IntPtr game, byte[] settings, UIntPtr n, uint players, uint ticks,
                                                                      byte[] path, StringBuilder report, UIntPtr cap);
  [DllImport(Lib)] public static extern int lockstep_game_trace_compare_v4(IntPtr game, byte[] path, StringBuilder report, UIntPtr cap);
  [DllImport(Lib)] public static extern int lockstep_bisect_game_v4(IntPtr module, IntPtr game, byte[] replayPath, int linear,
                                                                 StringBuilder report, UIntPtr cap);

  static bool checkedLayout;
  static readonly object checkLock = new object();

  // The binding's structs against the library's, once: names as the C headers spell them.
  public static void CheckLayout() {
    lock (checkLock) {
      if (checkedLayout) return;
      uint linked;
      try {
        linked = lockstep_api_version();
      } catch (DllNotFoundException e) {
        throw new DllNotFoundException(string.Format(
            "lockstep: cannot load lib{0}.so (with liblockstep_core.so beside it): the runtime looked beside the program " +
            "({1}), in LD_LIBRARY_PATH ({2}) and the system's library paths; under Mono a dllmap or MONO_PATH may point " +
            "elsewhere. Install lockstep, or put both libraries beside the program ({3})",
            Lib, AppDomain.CurrentDomain.BaseDirectory, Environment.GetEnvironmentVariable("LD_LIBRARY_PATH") ?? "unset", e.Message), e);
      }
      if (linked != ApiVersion)
        throw new LockstepException(1, string.Format("the library speaks C API version {0}, this binding {1}", lockstep_api_version(), ApiVersion));
      Check(typeof(Command), "lockstep_command", new[] {"Slot", "slot", "Size", "size", "Bytes", "bytes"});
      Check(typeof(FrameC), "lockstep_frame", new[] {"Tick", "tick", "Present", "present", "Filled", "filled", "Players", "players",
                                                     "InputSize", "input_size", "Inputs", "inputs", "CommandCount", "command_count", "Commands", "commands"});
      Check(typeof(Field), "lockstep_field", new[] {"Name", "name", "Kind", "kind", "Bits", "bits"});
      Check(typeof(GameC), "lockstep_game", new[] {"StructSize", "struct_size", "User", "user", "Name", "name", "Version", "version",
                                                   "BuildId", "build_id", "InputSize", "input_size", "Reset", "reset", "Step", "step", "Save", "save",
                                                   "Load", "load", "Tick", "tick", "EntityCount", "entity_count", "Fields", "fields"});
      Check(typeof(Config), "lockstep_client_config", new[] {"StructSize", "struct_size", "Host", "host", "Port", "port", "Name", "name",
                                                             "Token", "token", "Spectate", "spectate", "RejoinSecret", "rejoin_secret",
                                                             "LastTick", "last_tick", "Module", "module", "Game", "game", "Log", "log",
                                                             "LogUser", "log_user", "HashLog", "hash_log", "ConnectTimeoutMs", "connect_timeout_ms",
                                                             "PlayoutMaxMs", "playout_max_ms", "Predict", "predict", "ConnectToken", "connect_token",
                                                             "ConnectTokenLen", "connect_token_len", "StepBudgetUs", "step_budget_us"});
      Check(typeof(EventC), "lockstep_event", new[] {"StructSize", "struct_size", "Kind", "kind", "Tick", "tick", "Slot", "slot", "Code", "code", "Name", "name", "Detail", "detail"});
      Check(typeof(Stats), "lockstep_client_stats", new[] {"StructSize", "struct_size", "Tick", "tick", "Slot", "slot", "RttMs", "rtt_ms",
                                                           "JitterMs", "jitter_ms", "Loss", "loss", "LeadMs", "lead_ms", "PlayoutMs", "playout_ms",
                                                           "FramesBehind", "frames_behind", "InputsFilled", "inputs_filled", "FramesDrawn", "frames_drawn",
                                                           "FramesClamped", "frames_clamped", "Hash", "hash", "InputToScreenP50Ms", "input_to_screen_p50_ms",
                                                           "InputToScreenP99Ms", "input_to_screen_p99_ms", "Predict", "predict", "PredictedTick", "predicted_tick",
                                                           "PredictedTicks", "predicted_ticks", "Rebuilds", "rebuilds", "VerifiedPredictions", "verified_predictions",
                                                           "Mispredictions", "mispredictions", "GameSteps", "game_steps", "GameSaves", "game_saves",
                                                           "GameLoads", "game_loads", "GameReused", "game_reused", "StepBudgetMs", "step_budget_ms",
                                                           "StepCostUs", "step_cost_us", "FrameMs", "frame_ms"});
      checkedLayout = true;
    }
  }

  // pairs: the C# field, then the C field, for every field of the struct in order.
  public static void Check(Type t, string cname, string[] pairs) {
    UIntPtr off, size;
    if (lockstep_layout(cname, null, out off, out size) != 0 || (int)size.ToUInt64() != Marshal.SizeOf(t))
      throw new LockstepException(1, string.Format("{0} is {1} bytes in this binding, {2} in the library", cname, Marshal.SizeOf(t), size));
    var fields = t.GetFields(System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.Instance);
    if (fields.Length != pairs.Length / 2)
      throw new LockstepException(1, string.Format("{0} has {1} fields in this binding, {2} named", cname, fields.Length, pairs.Length / 2));
    for (int i = 0; i < pairs.Length; i += 2) {
      if (lockstep_layout(cname, pairs[i + 1], out off, out size) != 0)
        throw new LockstepException(1, string.Format("the library's {0} has no field {1}", cname, pairs[i + 1]));
      long mine = Marshal.OffsetOf(t, pairs[i]).ToInt64();
      if (mine != (long)off.ToUInt64())
        throw new LockstepException(1, string.Format("{0}.{1} is at {2} in this binding, at {3} in the library", cname, pairs[i + 1], mine, off));
    }
  }

  public static string Text(IntPtr p) { return p == IntPtr.Zero ? null : Marshal.PtrToStringAnsi(p); }
}

/// A simulation module; its identity is what a game that owns its state presents.
public sealed class Module {
  public readonly IntPtr Handle;
  public readonly string Name;
  public readonly uint Version, InputSize;
  public readonly ulong BuildId;
  internal Module(IntPtr h) {
    Handle = h;
    Name = Native.Text(Native.lockstep_module_name(h));
    Version = Native.lockstep_module_version(h);
    BuildId = Native.lockstep_module_build_id(h);
    InputSize = Native.lockstep_module_input_size(h);
  }
}

public sealed class Client : IDisposable {
  IntPtr handle;
  GCHandle self;                       // the `user` of the game's callbacks
  readonly List<IntPtr> strings = new List<IntPtr>();  // what the library may read after create
  readonly Game game;
  byte[] pendingSave;
  Frame frame;   // lent to Step, reused
  Dictionary<int, KeyValuePair<uint[], byte[][]>> commandsByCount;  // the frame's command arrays, by count
  byte[] lent;   // lent to TickOf, EntityCount and Fields, reused
  readonly Dictionary<string, IntPtr> fieldNames = new Dictionary<string, IntPtr>();
  Stats stats;
  Native.EventC ev;
  /// The exception a Game method threw, which ended the session; null while none has.
  public Exception CallbackError { get; private set; }

  // The callbacks: static, alive for the process.
  static readonly Native.ResetFn ResetCb = ResetC;
  static readonly Native.StepFn StepCb = StepC;
  static readonly Native.SaveFn SaveCb = SaveC;
  static readonly Native.LoadFn LoadCb = LoadC;
  static readonly Native.TickFn TickCb = TickC;
  static readonly Native.TickFn CountCb = CountC;
  static readonly Native.FieldsFn FieldsCb = FieldsC;
  static readonly Native.LogFn LogCb = LogC;
  static Action<int, string> logSink;  // the log callback's target: the client created last with one

  /// The clock every nowNs argument is on (CLOCK_MONOTONIC, ns).
  public static long NowNs() { return Native.lockstep_now_ns(); }

  public static Module ModuleBuiltin(string name) {
    Native.CheckLayout();
    IntPtr m;
    var err = new StringBuilder(256);
    int r = Native.lockstep_module_builtin(name, out m, err, (UIntPtr)256);
    if (r != 0) throw new LockstepException(r, err.ToString());
    return new Module(m);
  }

  public static Module ModuleLoad(string path) {
    Native.CheckLayout();
    IntPtr m;
    var err = new StringBuilder(256);
    int r = Native.lockstep_module_load(path, out m, err, (UIntPtr)256);
    if (r != 0) throw new LockstepException(r, err.ToString());
    return new Module(m);
  }

  public Client(ClientOptions o) {
    Native.CheckLayout();
    if (o == null) throw new LockstepException(1, "options must not be null");
    if ((o.Game == null) == (o.Module == IntPtr.Zero)) throw new LockstepException(1, "module or game: exactly one must be set");
    game = o.Game;
    var c = new Native.Config();
    Native.lockstep_client_config_init(ref c, (UIntPtr)Marshal.SizeOf(typeof(Native.Config)));
    c.Host = Str(o.Host);
    c.Port = o.Port;
    c.Name = Str(o.Name);
    c.Token = Str(o.Token);
    c.Spectate = o.Spectate ? 1 : 0;
    c.RejoinSecret = Str(o.RejoinSecret);
    c.LastTick = o.LastTick;
    c.HashLog = Str(o.HashLog);
    c.ConnectTimeoutMs = o.ConnectTimeoutMs;
    c.PlayoutMaxMs = o.PlayoutMaxMs;
    c.Predict = o.Predict;
    if (o.StepBudgetMs < 0) throw new LockstepException(1, "StepBudgetMs must be 0 (adaptive) or positive");
    c.StepBudgetUs = (long)Math.Round(o.StepBudgetMs * 1000);
    if (o.Log != null) {
      logSink = o.Log;
      c.Log = Marshal.GetFunctionPointerForDelegate(LogCb);
    }
    if (o.ConnectToken != null) {
      IntPtr t = Marshal.AllocHGlobal(Math.Max(1, o.ConnectToken.Length));
      Marshal.Copy(o.ConnectToken, 0, t, o.ConnectToken.Length);
      strings.Add(t);
      c.ConnectToken = t;
      c.ConnectTokenLen = (UIntPtr)o.ConnectToken.Length;
    }
    if (game != null) {
      c.Game = GameStruct();
    } else {
      c.Module = o.Module;
    }
    var err = new StringBuilder(256);
    IntPtr h;
    int r = Native.lockstep_client_create(ref c, out h, err, (UIntPtr)256);
    if (r != 0) {
      Free();
      throw new LockstepException(r, err.ToString());
    }
    handle = h;
    stats.StructSize = (uint)Marshal.SizeOf(typeof(Stats));
  }

  Client(Game g) { game = g; }  // for CompareGame: the game's callbacks without a session

  /// Two implementations of one game: `game` beside `module` (the one the server hosts) over the
  /// synctest's variants and input streams, `ticks` ticks each (lockstep_compare_game). Returns
  /// true when they are equal; `report` names the first difference by variant, tick, entity and
  /// field, or says they are equal.
  public static bool CompareGame(Module module, Game game, uint ticks, out string report, byte[] settings = null) {
    Native.CheckLayout();
    if (module == null || game == null) throw new ArgumentNullException(module == null ? "module" : "game");
    byte[] s = settings ?? new byte[0];
    return WithGame(game, (g, text) => Native.lockstep_compare_game_v4(module.Handle, g, s, (UIntPtr)s.Length, ticks, text, (UIntPtr)1024),
                    true, out report) == 0;
  }

  // call(the game's callbacks as a lockstep_game, a report buffer) on a client that holds only the
  // game: its result, with the report. Throws unless LOCKSTEP_OK, or a difference or a failed
  // callback of the game's when `differOk`.
  static int WithGame(Game game, Func<IntPtr, StringBuilder, int> call, bool differOk, out string report) {
    var holder = new Client(game);
    try {
      var text = new StringBuilder(1024);
      int r = call(holder.GameStruct(), text);
      report = text.ToString();
      if (holder.CallbackError != null) report += " (the game threw: " + holder.CallbackError.Message + ")";
      // LOCKSTEP_ERROR_DIFFERS (11) and LOCKSTEP_ERROR_CALLBACK (14): not equal, with the report.
      if (r != 0 && !(differOk && (r == 11 || r == 14))) throw new LockstepException(r, report);
      return r;
    } finally {
      holder.Free();
    }
  }

  /// Two implementations of one game with no module: `game`'s saved state of every tick over
  /// lockstep's seeded streams (1, 2 and `players` players, `ticks` ticks each) written to `path`,
  /// for another implementation, in any language, to compare with (CompareTrace). Returns the report.
  public static string TraceGame(Game game, string path, uint ticks = 600, uint players = 4, byte[] settings = null) {
    Native.CheckLayout();
    if (game == null || path == null) throw new ArgumentNullException(game == null ? "game" : "path");
    byte[] s = settings ?? new byte[0], file = Encoding.UTF8.GetBytes(path + "\0");
    string report;
    WithGame(game, (g, text) => Native.lockstep_game_trace_write_v4(g, s, (UIntPtr)s.Length, players, ticks, file, text, (UIntPtr)1024),
             false, out report);
    return report;
  }

  /// `game` over the streams of the trace at `path` (TraceGame's, or another language's): true when
  /// every tick's saved state equals the trace's; `report` names the first difference by variant,
  /// tick, entity and field (both states read through this game's Fields).
  public static bool CompareTrace(Game game, string path, out string report) {
    Native.CheckLayout();
    if (game == null || path == null) throw new ArgumentNullException(game == null ? "game" : "path");
    byte[] file = Encoding.UTF8.GetBytes(path + "\0");
    return WithGame(game, (g, text) => Native.lockstep_game_trace_compare_v4(g, file, text, (UIntPtr)1024), true, out report) == 0;
  }

  /// Where `game` parts from `module` on a recorded session: `replay` (a .replay with keyframes, or a
  /// desync bundle), searched over its keyframes (lockstep_bisect_game; `linear`: every stretch in
  /// order). Returns true when they agree; `report` names the tick, entity and field where they
  /// part and the ticks simulated against a linear search's.
  public static bool BisectGame(Module module, Game game, string replay, out string report, bool linear = false) {
    Native.CheckLayout();
    if (module == null || game == null || replay == null)
      throw new ArgumentNullException(module == null ? "module" : game == null ? "game" : "replay");
    byte[] path = Encoding.UTF8.GetBytes(replay + "\0");
    return WithGame(game, (g, text) => Native.lockstep_bisect_game_v4(module.Handle, g, path, linear ? 1 : 0, text, (UIntPtr)1024),
                    true, out report) == 0;
  }

  // The game's callbacks as a lockstep_game in unmanaged memory (freed with the client).
  IntPtr GameStruct() {
    self = GCHandle.Alloc(this);
    var g = new Native.GameC();
    Native.lockstep_game_init(ref g, (UIntPtr)Marshal.SizeOf(typeof(Native.GameC)));
    g.User = GCHandle.ToIntPtr(self);
    g.Name = Str(game.Name);
    g.Version = game.Version;
    g.BuildId = game.BuildId;
    g.InputSize = game.InputSize;
    g.Reset = Marshal.GetFunctionPointerForDelegate(ResetCb);
    g.Step = Marshal.GetFunctionPointerForDelegate(StepCb);
    g.Save = Marshal.GetFunctionPointerForDelegate(SaveCb);
    g.Load = Marshal.GetFunctionPointerForDelegate(LoadCb);
    g.Tick = Marshal.GetFunctionPointerForDelegate(TickCb);
    g.EntityCount = Marshal.GetFunctionPointerForDelegate(CountCb);
    g.Fields = Marshal.GetFunctionPointerForDelegate(FieldsCb);
    IntPtr gameMem = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(Native.GameC)));
    Marshal.StructureToPtr(g, gameMem, false);
    strings.Add(gameMem);
    return gameMem;
  }

  IntPtr Str(string s) {
    if (s == null) return IntPtr.Zero;
    byte[] b = Encoding.UTF8.GetBytes(s);
    IntPtr p = Marshal.AllocHGlobal(b.Length + 1);
    Marshal.Copy(b, 0, p, b.Length);
    Marshal.WriteByte(p, b.Length, 0);
    strings.Add(p);
    return p;
  }

  IntPtr H() {
    if (handle == IntPtr.Zero) throw new ObjectDisposedException("Lockstep.Client");
    return handle;
  }

  /// Handles the network, samples input, executes frames; returns when it next has work (ns).
  public long Update(long nowNs) { return Native.lockstep_client_update(H(), nowNs); }

  // A refused call: the library's sentence for it.
  void Check(int r) {
    if (r != 0) throw new LockstepException(r, Native.Text(Native.lockstep_client_error(H())));
  }

  public void SetInput(byte[] input) {
    if (input == null) throw new ArgumentNullException("input");
    Check(Native.lockstep_client_set_input(H(), input, (UIntPtr)input.Length));
  }

  public void AddCommand(byte[] command) {
    if (command == null) throw new ArgumentNullException("command");
    Check(Native.lockstep_client_add_command(H(), command, (UIntPtr)command.Length));
  }

  public void SetResult(byte[] result) {
    if (result == null) throw new ArgumentNullException("result");
    Check(Native.lockstep_client_set_result(H(), result, (UIntPtr)result.Length));
  }

  /// The frame drawn last was presented at nowNs: own input to screen is counted to here.
  public void Presented(long nowNs) { Native.lockstep_client_presented(H(), nowNs); }

  /// A thread that updates the client at every tick (for loops slower than 100 Hz); Dispose stops it.
  public void StartService() { Native.lockstep_client_start_service(H()); }

  /// The events since the last call, oldest first.
  public List<Event> PollEvents() {
    var list = new List<Event>();
    ev.StructSize = (uint)Marshal.SizeOf(typeof(Native.EventC));
    while (Native.lockstep_client_next_event(H(), ref ev) == 0 && ev.Kind != 0)
      list.Add(new Event { Kind = (EventKind)ev.Kind, Tick = ev.Tick, Slot = ev.Slot, Code = ev.Code, Name = Z(ev.Name), Detail = Z(ev.Detail) });
    return list;
  }

  static string Z(byte[] b) {
    int n = Array.IndexOf(b, (byte)0);
    return Encoding.UTF8.GetString(b, 0, n < 0 ? b.Length : n);
  }

  public double Alpha(long nowNs) { return Native.lockstep_client_alpha(H(), nowNs); }
  public double PredictedAlpha(long nowNs) { return Native.lockstep_client_predicted_alpha(H(), nowNs); }

  public Stats Stats {
    get {
      Check(Native.lockstep_client_stats_get(H(), ref stats));
      return stats;
    }
  }
  public bool Finished { get { return Native.lockstep_client_finished(H()) != 0; } }
  public int ExitCode { get { return Native.lockstep_client_exit_code(H()); } }
  public void Leave() { Native.lockstep_client_leave(H()); }

  public void Dispose() {
    if (handle != IntPtr.Zero) {
      Native.lockstep_client_destroy(handle);
      handle = IntPtr.Zero;
    }
    Free();
  }

  void Free() {
    foreach (IntPtr p in strings) Marshal.FreeHGlobal(p);
    strings.Clear();
    foreach (IntPtr p in fieldNames.Values) Marshal.FreeHGlobal(p);
    fieldNames.Clear();
    if (self.IsAllocated) self.Free();
  }

  // --- the callbacks: each finds its client, runs the Game's method, and turns a throw into a failure.

  static Client Of(IntPtr user) { return (Client)GCHandle.FromIntPtr(user).Target; }

  static byte[] Bytes(IntPtr p, UIntPtr n) {
    var b = new byte[(int)n.ToUInt64()];
    if (b.Length > 0) Marshal.Copy(p, b, 0, b.Length);
    return b;
  }

  // A state's bytes lent to TickOf, EntityCount or Fields for the call: one array per client,
  // reused while states keep their size.
  byte[] Lent(IntPtr p, UIntPtr n) {
    int len = (int)n.ToUInt64();
    if (lent == null || lent.Length != len) lent = new byte[len];
    if (len > 0) Marshal.Copy(p, lent, 0, len);
    return lent;
  }

  delegate T Body<T>(Client c);
  static T Guard<T>(IntPtr user, T failed, Body<T> body) {
    Client c = Of(user);
    if (c.CallbackError != null) return failed;
    try {
      return body(c);
    } catch (Exception e) {  // ends this client's session, never the process
      c.Failed(e);
      return failed;
    }
  }

  [AOT.MonoPInvokeCallback(typeof(Native.LogFn))]
  static void LogC(IntPtr user, int level, IntPtr line) {
    var sink = logSink;
    if (sink == null) return;
    try {
      sink(level, Native.Text(line));
    } catch (Exception) {  // a sink that throws loses its line, never the process
    }
  }

  [AOT.MonoPInvokeCallback(typeof(Native.ResetFn))]
  static int ResetC(IntPtr user, IntPtr settings, UIntPtr n, uint players) {
    return Guard(user, 1, c => { c.game.Reset(Bytes(settings, n), players); return 0; });
  }

  // The hot callbacks (Step, Save, TickOf: every tick) without a closure or a boxed struct: the
  // frame's fields are read at their offsets, and a throw is caught here rather than in Guard.
  static readonly int FrameTick = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Tick"),
                      FramePresent = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Present"),
                      FrameFilled = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Filled"),
                      FramePlayers = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Players"),
                      FrameInputSize = (int)Marshal.OffsetOf(typeof(Native.FrameC), "InputSize"),
                      FrameInputs = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Inputs"),
                      FrameCommandCount = (int)Marshal.OffsetOf(typeof(Native.FrameC), "CommandCount"),
                      FrameCommands = (int)Marshal.OffsetOf(typeof(Native.FrameC), "Commands"),
                      CommandSlot = (int)Marshal.OffsetOf(typeof(Native.Command), "Slot"),
                      CommandSize = (int)Marshal.OffsetOf(typeof(Native.Command), "Size"),
                      CommandBytes = (int)Marshal.OffsetOf(typeof(Native.Command), "Bytes"),
                      CommandStride = Marshal.SizeOf(typeof(Native.Command));

  // The Frame lent to Step: one per client, its arrays reused while the players, the input size,
  // the command count and each command's size stay.
  Frame FrameOf(IntPtr frame) {
    uint players = (uint)Marshal.ReadInt32(frame, FramePlayers), inputSize = (uint)Marshal.ReadInt32(frame, FrameInputSize);
    int count = Marshal.ReadInt32(frame, FrameCommandCount);
    Frame fr = this.frame;
    if (fr == null || fr.Inputs.Length != players || (players > 0 && fr.Inputs[0].Length != inputSize)) {
      fr = this.frame = new Frame { Inputs = new byte[players][] };
      for (int p = 0; p < players; ++p) fr.Inputs[p] = new byte[inputSize];
    }
    if (fr.Commands == null || fr.Commands.Length != count) {
      if (commandsByCount == null) commandsByCount = new Dictionary<int, KeyValuePair<uint[], byte[][]>>();
      KeyValuePair<uint[], byte[][]> arrays;
      if (!commandsByCount.TryGetValue(count, out arrays)) {
        arrays = new KeyValuePair<uint[], byte[][]>(new uint[count], new byte[count][]);
        commandsByCount[count] = arrays;
      }
      fr.CommandSlots = arrays.Key;
      fr.Commands = arrays.Value;
    }
    fr.Tick = (uint)Marshal.ReadInt32(frame, FrameTick);
    fr.Present = (uint)Marshal.ReadInt32(frame, FramePresent);
    fr.Filled = (uint)Marshal.ReadInt32(frame, FrameFilled);
    fr.Players = players;
    IntPtr inputs = Marshal.ReadIntPtr(frame, FrameInputs);
    for (int p = 0; p < players; ++p)
      if (inputSize > 0) Marshal.Copy(new IntPtr(inputs.ToInt64() + p * inputSize), fr.Inputs[p], 0, (int)inputSize);
    IntPtr commands = Marshal.ReadIntPtr(frame, FrameCommands);
    for (int i = 0; i < count; ++i) {
      IntPtr cmd = new IntPtr(commands.ToInt64() + i * CommandStride);
      int size = Marshal.ReadInt32(cmd, CommandSize);
      fr.CommandSlots[i] = (uint)Marshal.ReadInt32(cmd, CommandSlot);
      if (fr.Commands[i] == null || fr.Commands[i].Length != size) fr.Commands[i] = new byte[size];
      if (size > 0) Marshal.Copy(Marshal.ReadIntPtr(cmd, CommandBytes), fr.Commands[i], 0, size);
    }
    return fr;
  }

  // A throw from the game's method: kept, and its reason given to the library (Guard's catch).
  void Failed(Exception e) {
    CallbackError = e;
    // The reason, for the Ended event and the other players (a session-less CompareGame has no handle).
    if (handle != IntPtr.Zero)
      Native.lockstep_client_callback_failed(handle, Encoding.UTF8.GetBytes(e.GetType().Name + ": " + e.Message + "\0"));
  }

  [AOT.MonoPInvokeCallback(typeof(Native.StepFn))]
  static int StepC(IntPtr user, IntPtr frame) {
    Client c = Of(user);
    if (c.CallbackError != null) return 1;
    try {
      c.game.Step(c.FrameOf(frame));
      return 0;
    } catch (Exception e) {  // ends this client's session, never the process
      c.Failed(e);
      return 1;
    }
  }

  [AOT.MonoPInvokeCallback(typeof(Native.SaveFn))]
  static UIntPtr SaveC(IntPtr user, IntPtr outp, UIntPtr cap) {
    Client c = Of(user);
    if (c.CallbackError != null) return UIntPtr.Zero;
    try {
      // lockstep asks for the length first (cap 0), then for the bytes: one Save() for both.
      ulong capacity = cap.ToUInt64();
      if (capacity == 0 || c.pendingSave == null) c.pendingSave = c.game.Save() ?? Empty;
      byte[] b = c.pendingSave;
      if (capacity > 0) {
        c.pendingSave = null;
        if ((ulong)b.Length <= capacity && b.Length > 0) Marshal.Copy(b, 0, outp, b.Length);
      }
      return (UIntPtr)b.Length;
    } catch (Exception e) {
      c.Failed(e);
      return UIntPtr.Zero;
    }
  }
  static readonly byte[] Empty = new byte[0];

  [AOT.MonoPInvokeCallback(typeof(Native.LoadFn))]
  static int LoadC(IntPtr user, IntPtr bytes, UIntPtr n) {
    return Guard(user, 1, c => c.game.Load(Bytes(bytes, n)) ? 0 : 1);
  }

  [AOT.MonoPInvokeCallback(typeof(Native.TickFn))]
  static uint TickC(IntPtr user, IntPtr state, UIntPtr n) {
    Client c = Of(user);
    if (c.CallbackError != null) return 0;
    try {
      return c.game.TickOf(c.Lent(state, n));
    } catch (Exception e) {
      c.Failed(e);
      return 0;
    }
  }

  [AOT.MonoPInvokeCallback(typeof(Native.TickFn))]
  static uint CountC(IntPtr user, IntPtr state, UIntPtr n) {
    return Guard(user, 0u, c => c.game.EntityCount(c.Lent(state, n)));
  }

  [AOT.MonoPInvokeCallback(typeof(Native.FieldsFn))]
  static UIntPtr FieldsC(IntPtr user, IntPtr state, UIntPtr n, uint entity, IntPtr outp, UIntPtr cap) {
    return Guard(user, UIntPtr.Zero, c => {
      var values = c.game.Fields(c.Lent(state, n), entity);
      if (values == null) return UIntPtr.Zero;
      if ((ulong)values.Count <= cap.ToUInt64()) {
        int size = Marshal.SizeOf(typeof(Native.Field));
        for (int i = 0; i < values.Count; ++i) {
          IntPtr name;
          if (!c.fieldNames.TryGetValue(values[i].Key, out name)) {
            byte[] b = Encoding.ASCII.GetBytes(values[i].Key);
            name = Marshal.AllocHGlobal(b.Length + 1);
            Marshal.Copy(b, 0, name, b.Length);
            Marshal.WriteByte(name, b.Length, 0);
            c.fieldNames[values[i].Key] = name;
          }
          var f = new Native.Field { Name = name, Kind = values[i].Value.Key, Bits = values[i].Value.Value };
          Marshal.StructureToPtr(f, new IntPtr(outp.ToInt64() + i * size), false);
        }
      }
      return (UIntPtr)values.Count;
    });
  }
}

}  // namespace Lockstep
