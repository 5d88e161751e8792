// The interface every layer above the simulation is written against (session, replay, renderers).
// A team brings its own simulation by implementing it, and gets networking, hashing and desync
// tooling for free. The built-in games (games/) implement it, and so does every module.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"

namespace lockstep {

/// What a world starts from; sent to clients at join and stored in replays, so every peer builds
/// the same tick-0 state.
struct LOCKSTEP_API WorldParams {
  /// The module's world settings in its own canonical encoding (Module::parse_world makes them;
  /// empty: the module's defaults). At most kMaxSettingsBytes.
  std::vector<std::uint8_t> settings;
  std::uint32_t players = 4;  ///< player slots, 1..kMaxPlayers
};
inline constexpr std::size_t kMaxSettingsBytes = 1024;

/// One thing for a renderer to draw, in world units, already blended by alpha. Renderers draw a
/// list in order (later over earlier) and know nothing else of the game.
struct LOCKSTEP_API DrawShape {
  enum class Kind : std::uint8_t {
    Circle,  ///< filled; centre (x, y), radius a
    Rect,    ///< filled; top-left corner (x, y), width a, height b
    Line,    ///< from (x, y) to (a, b)
    Text,    ///< `text` with its top-left corner at (x, y), a units high
  };
  Kind kind = Kind::Circle;
  float x = 0, y = 0, a = 0, b = 0;
  std::int32_t player = -1;  ///< drawn in this player's colour (the local player's stands out) ...
  std::uint8_t palette = 0;  ///< ... or, for player -1, this palette colour (kPaletteSize colours)
  std::string text;          ///< Text only: printable ASCII

  static DrawShape circle(float x, float y, float r, std::int32_t player, std::uint8_t palette = 0) {
    return {Kind::Circle, x, y, r, 0, player, palette, {}};
  }
  static DrawShape rect(float x, float y, float w, float h, std::int32_t player, std::uint8_t palette = 0) {
    return {Kind::Rect, x, y, w, h, player, palette, {}};
  }
  static DrawShape line(float x0, float y0, float x1, float y1, std::int32_t player, std::uint8_t palette = 0) {
    return {Kind::Line, x0, y0, x1, y1, player, palette, {}};
  }
  static DrawShape label(float x, float y, float height, std::string text, std::int32_t player,
                         std::uint8_t palette = 0) {
    return {Kind::Text, x, y, height, 0, player, palette, std::move(text)};
  }
};
/// The palette colours a shape of no player may use: 0 neutral grey, 1 white, 2 red, 3 green,
/// 4 yellow, 5 cyan, 6 magenta, 7 dark grey.
inline constexpr std::uint8_t kPaletteSize = 8;
using DrawList = std::vector<DrawShape>;

/// One named value of the state, for desync reports: the exact bits and how to read them.
struct LOCKSTEP_API FieldValue {
  std::string name;
  enum class Kind : std::uint8_t { F32, F64, U32, U64 } kind = Kind::F32;
  std::uint64_t bits = 0;  ///< the value's bit pattern, zero-extended
};

/// A deterministic fixed-dt simulation. Implementations keep no clock, no I/O and no global
/// random: step() is a pure function of the current state and the input frame.
class LOCKSTEP_API Simulation {
 public:
  virtual ~Simulation() = default;

  /// The tick of the current state (0 after construction).
  [[nodiscard]] virtual Tick tick() const = 0;
  /// Advances one tick; `frame.tick` must be tick() + 1 (asserted), and its inputs input_size()
  /// bytes each. An input or command that is not valid for the game does nothing, on every peer.
  virtual void step(const InputFrame& frame) = 0;
  /// Bytes of one player's input per tick (0..kMaxInputBytes), fixed for the simulation.
  [[nodiscard]] virtual std::uint32_t input_size() const = 0;

  /// Appends the canonical little-endian serialization of the whole state to `out`.
  virtual void serialize(std::vector<std::uint8_t>& out) const = 0;
  /// Replaces the state with one read from `bytes`. Returns false and leaves the state as it
  /// was when the bytes are not a valid state of this simulation (untrusted input is fine).
  [[nodiscard]] virtual bool deserialize(std::span<const std::uint8_t> bytes) = 0;
  /// XXH3-64 of exactly the bytes serialize() writes.
  [[nodiscard]] virtual std::uint64_t hash() const = 0;

  /// Number of entities, for localizing a divergence.
  [[nodiscard]] virtual std::uint32_t entity_count() const = 0;
  /// A hash of one entity's canonical fields (entity < entity_count()).
  [[nodiscard]] virtual std::uint64_t entity_hash(std::uint32_t entity) const = 0;

  /// The fields of one entity, in a fixed order (entity < entity_count()).
  [[nodiscard]] virtual std::vector<FieldValue> entity_fields(std::uint32_t entity) const = 0;
  /// The state that belongs to no entity (tick, PRNG, ...), in a fixed order.
  [[nodiscard]] virtual std::vector<FieldValue> global_fields() const = 0;

  /// A new simulation holding a copy of this state.
  [[nodiscard]] virtual std::unique_ptr<Simulation> clone() const = 0;
  /// Copies `other`'s state into this one, reusing storage. `other` must be the same kind.
  virtual void assign(const Simulation& other) = 0;

  /// Hash of the simulation's identity, version, constants and floating-point build settings:
  /// peers whose fingerprints differ cannot stay in sync and must not play together.
  [[nodiscard]] virtual std::uint64_t fingerprint() const = 0;

  /// Replaces `out` with the shapes to draw, blended from `previous` (this simulation's state one
  /// tick earlier, same kind) to this state by `alpha` in [0, 1].
  virtual void draw(const Simulation& previous, float alpha, DrawList& out) const = 0;
  /// World size in world units, for renderers.
  [[nodiscard]] virtual float width() const = 0;
  [[nodiscard]] virtual float height() const = 0;

  /// The module's own state for a game that draws it itself: the lockstep_sim* of a module
  /// loaded from a library or a table (module_abi.h); nullptr for other simulations (a C++ game
  /// reads its own type with dynamic_cast).
  [[nodiscard]] virtual const void* native_state() const { return nullptr; }
  /// Test hook: flips the lowest bit of one stored value, picked by `selector` (any value:
  /// reduced modulo the number of values). Used to prove desyncs are caught and localized.
  /// Implementations document which (entity, field) a selector names.
  virtual void perturb(std::uint64_t selector) = 0;
};

/// Builds a simulation at tick 0. Returns nullptr when the parameters are out of range.
using SimulationFactory = std::unique_ptr<Simulation> (*)(const WorldParams&);
/// The same with a context of its own (a game's callbacks, an in-process module): what sessions take.
using WorldFactory = std::function<std::unique_ptr<Simulation>(const WorldParams&)>;

/// A shared library a module's fingerprint covers: the name the module asks for (its DT_NEEDED
/// entry, e.g. "libbox2d.so.2.4") and the build this process loaded: its GNU build id in hex, or
/// "xxh3:" and the hash of the file's bytes when it has none, or "opted out" for one the module
/// leaves out of its fingerprint. Peers whose builds differ are refused at join with the library
/// named.
struct LOCKSTEP_API LibraryBuild {
  std::string name;
  std::string build;
  bool operator==(const LibraryBuild&) const = default;
};
/// The bounds of a module's library list, wherever it is carried (a JoinRequest, a replay's
/// header, a game description): at most kMaxLibraries, names of 1..kMaxLibraryNameBytes bytes,
/// builds of at most kMaxLibraryBuildBytes (a longer build id is carried as its hash).
inline constexpr std::size_t kMaxLibraries = 16, kMaxLibraryNameBytes = 128, kMaxLibraryBuildBytes = 80;
/// Why two modules' library lists differ, each side named ("the joining peer", "the server"):
/// "libbox2d.so.2 is another build: the joining peer's X, the server's Y", or a library only one
/// side links, with the way out; "" when they agree.
LOCKSTEP_API std::string library_difference(std::span<const LibraryBuild> a, std::span<const LibraryBuild> b,
                                            std::string_view a_name, std::string_view b_name);

}  // namespace lockstep
