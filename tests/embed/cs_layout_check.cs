// The C# binding's layout check can fail: compiled together with bindings/csharp/Lockstep.cs (its
// internals in reach), it holds the binding's own structs to the library (they must pass), then a
// lockstep_game with two fields in each other's places (its size unchanged) and a lockstep_event one byte short (each must
// be refused with a sentence naming the struct). Exit 0 when all three hold.
using System;
using System.Runtime.InteropServices;

static class LayoutCheck {
  [StructLayout(LayoutKind.Sequential)]
  struct GameSwapped {  // input_size where version is, and the other way round: the same size, other offsets
    public uint StructSize;
    public IntPtr User, Name;
    public uint InputSize;
    public ulong BuildId;
    public uint Version;
    public IntPtr Reset, Step, Save, Load, Tick, EntityCount, Fields;
  }
  [StructLayout(LayoutKind.Sequential)]
  struct EventShort {
    public uint StructSize, Kind, Tick;
    public int Slot, Code;
    [MarshalAs(UnmanagedType.ByValArray, SizeConst = 33)] public byte[] Name;
    [MarshalAs(UnmanagedType.ByValArray, SizeConst = 255)] public byte[] Detail;
  }

  static int Main() {
    int failures = 0;
    try {
      Lockstep.Native.CheckLayout();
      Console.WriteLine("ok: the binding's structs are the library's");
    } catch (Lockstep.LockstepException e) {
      Console.WriteLine("FAIL: the binding's own structs were refused: " + e.Message);
      ++failures;
    }
    string[] game = {"StructSize", "struct_size", "User", "user", "Name", "name", "Version", "version", "BuildId", "build_id",
                     "InputSize", "input_size", "Reset", "reset", "Step", "step", "Save", "save", "Load", "load", "Tick", "tick",
                     "EntityCount", "entity_count", "Fields", "fields"};
    try {
      Lockstep.Native.Check(typeof(GameSwapped), "lockstep_game", game);
      Console.WriteLine("FAIL: a lockstep_game with version and input_size swapped was taken");
      ++failures;
    } catch (Lockstep.LockstepException e) {
      Console.WriteLine("ok: refused: " + e.Message);
      if (e.Message.IndexOf("lockstep_game", StringComparison.Ordinal) < 0) ++failures;
    }
    string[] ev = {"StructSize", "struct_size", "Kind", "kind", "Tick", "tick", "Slot", "slot", "Code", "code", "Name", "name", "Detail", "detail"};
    try {
      Lockstep.Native.Check(typeof(EventShort), "lockstep_event", ev);
      Console.WriteLine("FAIL: a lockstep_event one byte short was taken");
      ++failures;
    } catch (Lockstep.LockstepException e) {
      Console.WriteLine("ok: refused: " + e.Message);
    }
    return failures == 0 ? 0 : 1;
  }
}
