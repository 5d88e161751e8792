// lockstep_game_trace_write and lockstep_game_trace_compare (lockstep_session.h): two
// implementations of one game checked against each other with no module, in any two languages.
// One writes its saved state of every tick over seeded input and command streams; the other
// replays the same streams and names the first tick, entity and field where its state differs,
// reading both states through its own fields callback.
//
// The trace file (untrusted when read): "LKTRACE1", the game's identity (u32 length + name, u32
// version, u64 build id, u32 input size), u32 length + settings, u32 ticks, u64 seed, u32 variant
// count, then per variant u32 players and, for ticks 0..ticks, u32 length + the saved bytes.
// Little-endian.
// The _v4 entry points answer with API version 4's codes; the plain names with versions 2 and 3's.
#define LOCKSTEP_PLAIN_NAMES  // this file defines both names
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "game_simulation.hpp"
#include "handles.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/lockstep_session.h"
#include "lockstep/rng.hpp"
#include "lockstep/state_hash.hpp"

using namespace lockstep;

namespace {

constexpr char kMagic[8] = {'L', 'K', 'T', 'R', 'A', 'C', 'E', '1'};
constexpr std::uint64_t kSeed = 1;
constexpr std::uint32_t kMaxTicks = 1'000'000;
constexpr std::uint32_t kMaxStateBytes = 64u << 20;  // one saved state in a trace, at most
constexpr std::uint32_t kMaxTraceSettings = 1u << 20;
constexpr std::uint32_t kMaxVariants = 8;

// The streams both sides step by: for each player and tick, the last input held or new random
// bytes (half the ticks), and now and then a random command (usually meaningless to the game,
// which must then do nothing, alike on both sides). A function of (seed, players, tick) alone.
InputFrame stream_frame(std::uint32_t players, std::uint32_t input_size, Tick t, std::vector<std::vector<std::uint8_t>>& held) {
  InputFrame f;
  f.reset(t, players, input_size);
  held.resize(players, std::vector<std::uint8_t>(input_size, 0));
  for (std::uint32_t p = 0; p < players; ++p) {
    f.present |= 1u << p;
    Rng rng = Rng::seeded(kSeed * 0x9e3779b97f4a7c15ULL + p, t);
    if (rng.below(2) == 0)
      for (auto& b : held[p]) b = static_cast<std::uint8_t>(rng.next_u32());
    std::copy(held[p].begin(), held[p].end(), f.input(p).begin());
    if (rng.below(16) == 0) {
      Commands cmds;
      std::vector<std::uint8_t> c(1 + rng.below(16));
      for (auto& b : c) b = static_cast<std::uint8_t>(rng.next_u32());
      cmds.add(c);
      f.add_commands(p, cmds);
    }
  }
  return f;
}

// Steps the game by tick t of the streams: false when its step() fails.
bool step_stream(const lockstep_game& g, std::uint32_t players, Tick t, std::vector<std::vector<std::uint8_t>>& held) {
  std::vector<lockstep_command> commands;
  const InputFrame f = stream_frame(players, g.input_size, t, held);
  const lockstep_frame cf = c_frame(f, &commands);
  return g.step(g.user, &cf) == 0;
}

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

void put_u32(std::FILE* f, std::uint32_t v) {
  std::uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  std::fwrite(b, 1, 4, f);
}
void put_u64(std::FILE* f, std::uint64_t v) {
  put_u32(f, static_cast<std::uint32_t>(v));
  put_u32(f, static_cast<std::uint32_t>(v >> 32));
}
void put_bytes(std::FILE* f, const void* p, std::size_t n) {
  put_u32(f, static_cast<std::uint32_t>(n));
  if (n) std::fwrite(p, 1, n, f);
}
bool get_u32(std::FILE* f, std::uint32_t* v) {
  std::uint8_t b[4];
  if (std::fread(b, 1, 4, f) != 4) return false;
  *v = 0;
  for (int i = 0; i < 4; ++i) *v |= std::uint32_t{b[i]} << (8 * i);
  return true;
}
bool get_u64(std::FILE* f, std::uint64_t* v) {
  std::uint32_t lo = 0, hi = 0;
  if (!get_u32(f, &lo) || !get_u32(f, &hi)) return false;
  *v = lo | (std::uint64_t{hi} << 32);
  return true;
}
bool get_bytes(std::FILE* f, std::uint32_t most, std::vector<std::uint8_t>* out) {
  std::uint32_t n = 0;
  if (!get_u32(f, &n) || n > most) return false;
  out->resize(n);
  return n == 0 || std::fread(out->data(), 1, n, f) == n;
}

// The game's table read and checked, as for a session (the caller's struct version).
lockstep_status read_game(const lockstep_game& given, lockstep_game* g, std::string* why) {
  lockstep_game_defaults(g);
  if (!c_api::read_versioned(given, g, sizeof(lockstep_game), "game", why)) return LOCKSTEP_ERROR_ARGUMENT;
  if (!g->name || !g->reset || !g->step || !g->save || !g->load || !g->tick) {
    *why = "game: name, reset, step, save, load and tick must be set";
    return LOCKSTEP_ERROR_ARGUMENT;
  }
  if (g->input_size > kMaxInputBytes) {
    *why = "game.input_size must be at most 64";
    return LOCKSTEP_ERROR_ARGUMENT;
  }
  return LOCKSTEP_OK;
}

std::string identity(const std::string& name, std::uint32_t version, std::uint64_t build_id, std::uint32_t input_size) {
  return name + " version " + std::to_string(version) + " build " + hash_hex(build_id) + " input " +
         std::to_string(input_size) + " bytes";
}

// Where two saved states of one game differ, read through this game's fields callback.
std::string where(const std::shared_ptr<GameContext>& ctx, std::uint32_t players, const std::vector<std::uint8_t>& theirs,
                  const std::vector<std::uint8_t>& ours) {
  const GameSimulation a(ctx, theirs, players, 0), b(ctx, ours, players, 0);
  StateDifference d = locate_difference(a, b);
  if (d.where == "none") {  // no declared field differs: the bytes
    std::size_t at = 0;
    while (at < std::min(theirs.size(), ours.size()) && theirs[at] == ours[at]) ++at;
    return "no field differs (or the game gives none): the saved bytes differ from offset " + std::to_string(at) +
           " (the trace's " + std::to_string(theirs.size()) + " bytes, this game's " + std::to_string(ours.size()) + ")";
  }
  return difference_text(d);
}

}  // namespace

extern "C" lockstep_status lockstep_game_trace_write_v4(const lockstep_game* given, const uint8_t* settings, size_t n,
                                                        uint32_t players, uint32_t ticks, const char* path, char* report,
                                                        size_t report_cap) try {
  c_api::entered(__func__);
  using c_api::fail;
  if (!given || !path || (n > 0 && !settings) || ticks == 0 || ticks > kMaxTicks || players == 0 || players > kMaxPlayers ||
      n > kMaxTraceSettings)
    return fail(LOCKSTEP_ERROR_ARGUMENT,
                "game and path must not be NULL, nor settings with n > 0 (at most 1 MiB); ticks 1..1000000, players 1..32",
                report, report_cap);
  lockstep_game g;
  std::string why;
  if (const lockstep_status bad = read_game(*given, &g, &why); bad != LOCKSTEP_OK) return fail(bad, why, report, report_cap);
  std::vector<std::uint32_t> counts{1};
  if (players >= 2) counts.push_back(2);
  if (players > 2) counts.push_back(players);
  File out{std::fopen(path, "wb")};
  if (!out.f) return fail(LOCKSTEP_ERROR_FILE, std::string("cannot write ") + path, report, report_cap);
  std::fwrite(kMagic, 1, sizeof kMagic, out.f);
  put_bytes(out.f, g.name, std::strlen(g.name));
  put_u32(out.f, g.version);
  put_u64(out.f, g.build_id);
  put_u32(out.f, g.input_size);
  put_bytes(out.f, settings, n);
  put_u32(out.f, ticks);
  put_u64(out.f, kSeed);
  put_u32(out.f, static_cast<std::uint32_t>(counts.size()));
  auto ctx = std::make_shared<GameContext>();
  ctx->game = g;
  std::vector<std::uint8_t> state;
  for (const std::uint32_t p : counts) {
    put_u32(out.f, p);
    if (g.reset(g.user, settings, n, p) != 0)
      return fail(LOCKSTEP_ERROR_CALLBACK, "the game's reset() failed for " + std::to_string(p) + " players", report, report_cap);
    std::vector<std::vector<std::uint8_t>> held;
    for (Tick t = 0; t <= ticks; ++t) {
      if (t > 0 && !step_stream(g, p, t, held))
        return fail(LOCKSTEP_ERROR_CALLBACK, std::to_string(p) + " players, tick " + std::to_string(t) + ": the game's step() failed",
                    report, report_cap);
      if (!GameSimulation::save(*ctx, &state) || state.size() > kMaxStateBytes)
        return fail(LOCKSTEP_ERROR_CALLBACK, std::to_string(p) + " players, tick " + std::to_string(t) + ": " +
                                              (ctx->failure.empty() ? "a saved state over 64 MiB" : ctx->failure),
                    report, report_cap);
      put_bytes(out.f, state.data(), state.size());
    }
  }
  if (std::fflush(out.f) != 0 || std::ferror(out.f))
    return fail(LOCKSTEP_ERROR_FILE, std::string("cannot write ") + path, report, report_cap);
  return fail(LOCKSTEP_OK,
              "traced " + identity(g.name, g.version, g.build_id, g.input_size) + ": " + std::to_string(counts.size()) +
                  " variants, " + std::to_string(ticks) + " ticks each, to " + path,
              report, report_cap);
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_game_trace_compare_v4(const lockstep_game* given, const char* path, char* report,
                                                          size_t report_cap) try {
  c_api::entered(__func__);
  using c_api::fail;
  if (!given || !path) return fail(LOCKSTEP_ERROR_ARGUMENT, "game and path must not be NULL", report, report_cap);
  lockstep_game g;
  std::string why;
  if (const lockstep_status bad = read_game(*given, &g, &why); bad != LOCKSTEP_OK) return fail(bad, why, report, report_cap);
  File in{std::fopen(path, "rb")};
  if (!in.f) return fail(LOCKSTEP_ERROR_FILE, std::string("cannot open ") + path, report, report_cap);
  const std::string damaged = std::string(path) + " is not a whole lockstep game trace";
  char magic[sizeof kMagic];
  std::vector<std::uint8_t> name, settings, theirs, ours;
  std::uint32_t version = 0, input_size = 0, ticks = 0, variants = 0;
  std::uint64_t build_id = 0, seed = 0;
  if (std::fread(magic, 1, sizeof magic, in.f) != sizeof magic || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    return fail(LOCKSTEP_ERROR_FORMAT, std::string(path) + " is not a lockstep game trace (LKTRACE1)", report, report_cap);
  if (!get_bytes(in.f, 64, &name) || !get_u32(in.f, &version) || !get_u64(in.f, &build_id) || !get_u32(in.f, &input_size) ||
      !get_bytes(in.f, kMaxTraceSettings, &settings) || !get_u32(in.f, &ticks) || !get_u64(in.f, &seed) ||
      !get_u32(in.f, &variants) || ticks == 0 || ticks > kMaxTicks || variants == 0 || variants > kMaxVariants ||
      seed != kSeed || input_size > kMaxInputBytes)
    return fail(LOCKSTEP_ERROR_FORMAT, damaged + " (its header)", report, report_cap);
  const std::string traced(name.begin(), name.end());
  if (traced != g.name || version != g.version || build_id != g.build_id || input_size != g.input_size)
    return fail(LOCKSTEP_ERROR_DIFFERS,
                "the identity differs: the trace is of " + identity(traced, version, build_id, input_size) + "; this game says " +
                    identity(g.name, g.version, g.build_id, g.input_size),
                report, report_cap);
  auto ctx = std::make_shared<GameContext>();
  ctx->game = g;
  for (std::uint32_t v = 0; v < variants; ++v) {
    std::uint32_t players = 0;
    if (!get_u32(in.f, &players) || players == 0 || players > kMaxPlayers)
      return fail(LOCKSTEP_ERROR_FORMAT, damaged + " (variant " + std::to_string(v) + ")", report, report_cap);
    const std::string variant = std::to_string(players) + (players == 1 ? " player" : " players");
    if (g.reset(g.user, settings.data(), settings.size(), players) != 0)
      return fail(LOCKSTEP_ERROR_CALLBACK, variant + ": this game's reset() failed", report, report_cap);
    std::vector<std::vector<std::uint8_t>> held;
    for (Tick t = 0; t <= ticks; ++t) {
      if (t > 0 && !step_stream(g, players, t, held))
        return fail(LOCKSTEP_ERROR_CALLBACK, variant + ", tick " + std::to_string(t) + ": this game's step() failed", report,
                    report_cap);
      if (!get_bytes(in.f, kMaxStateBytes, &theirs))
        return fail(LOCKSTEP_ERROR_FORMAT, damaged + " (" + variant + ", tick " + std::to_string(t) + ")", report, report_cap);
      if (!GameSimulation::save(*ctx, &ours))
        return fail(LOCKSTEP_ERROR_CALLBACK, variant + ", tick " + std::to_string(t) + ": " + ctx->failure, report, report_cap);
      if (theirs != ours)
        return fail(LOCKSTEP_ERROR_DIFFERS,
                    variant + ", tick " + std::to_string(t) + ": " + where(ctx, players, theirs, ours) + " (trace vs this game)",
                    report, report_cap);
    }
  }
  return fail(LOCKSTEP_OK,
              "equal: " + std::to_string(variants) + " variants, " + std::to_string(ticks) +
                  " ticks each, the same saved bytes at every tick as the trace's " + identity(traced, version, build_id, input_size),
              report, report_cap);
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_game_trace_write(const lockstep_game* given, const uint8_t* settings, size_t n,
                                                     uint32_t players, uint32_t ticks, const char* path, char* report,
                                                     size_t report_cap) try {
  c_api::entered(__func__);
  return c_api::as_v3(lockstep_game_trace_write_v4(given, settings, n, players, ticks, path, report, report_cap));
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_game_trace_compare(const lockstep_game* given, const char* path, char* report,
                                                       size_t report_cap) try {
  c_api::entered(__func__);
  return c_api::as_v3(lockstep_game_trace_compare_v4(given, path, report, report_cap));
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}
