// Modules from shared libraries (--sim-lib FILE.so): the C table of module_abi.h behind the
// Simulation and Module interfaces. One library per process; it stays loaded until exit.
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <utility>
#include <cstring>
#include <optional>

#include "lockstep/bytes.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/module_abi.h"
#include "lockstep/state_hash.hpp"
#include "fma_scan.hpp"
#include "library_file.hpp"

namespace lockstep {

namespace {

using module_lib::check_library_file;
using module_lib::covered_libraries;
using module_lib::file_hash;
using module_lib::kOptedOut;

// The modules this process loaded: a few, so that two builds of one module can be compared in one
// process (`lockstep-replay bisect`). Module's functions are plain pointers, so each slot has its
// own instances of them (lib_create<N>, ...).
struct Loaded {
  const lockstep_module_v2* table = nullptr;
  std::string name, description, controls_help, golden;
  std::uint64_t build_id = 0;  // the table's build_id (or the library file's hash), and the libraries it covers
  std::vector<LibraryBuild> libraries;  // the libraries the fingerprint covers
  std::string code;                     // the library file's machine code (Module::code)
  // The library's optional exports for the desync tools (module_abi.h), or nullptr.
  lockstep_entity_kind_fn kind = nullptr;
  lockstep_entity_position_fn position = nullptr;
  lockstep_bytes_text_fn input_text = nullptr, command_text = nullptr;
  Module module;
};
constexpr std::size_t kMaxLoaded = 8;
std::array<Loaded, kMaxLoaded> g_loaded;
std::size_t g_loaded_count = 0;

class LibSimulation final : public Simulation {
 private:
  const lockstep_module_v2* t_;
  lockstep_sim* s_;
  std::uint32_t players_;
  std::uint64_t fingerprint_;  // the module's and the world settings'
  mutable std::vector<std::uint8_t> scratch_;
  mutable std::vector<lockstep_shape> shapes_;
  std::vector<lockstep_command> commands_;

 public:
  LibSimulation(const lockstep_module_v2* t, lockstep_sim* s, std::uint32_t players, std::uint64_t fingerprint)
      : t_(t), s_(s), players_(players), fingerprint_(fingerprint) {}
  ~LibSimulation() override { t_->destroy(s_); }
  LibSimulation(const LibSimulation&) = delete;
  LibSimulation& operator=(const LibSimulation&) = delete;

  Tick tick() const override { return t_->tick(s_); }
  void step(const InputFrame& frame) override {
    const lockstep_frame f = c_frame(frame, &commands_);
    t_->step(s_, &f);
  }
  std::uint32_t input_size() const override { return t_->input_size; }
  void serialize(std::vector<std::uint8_t>& out) const override {
    const std::size_t n = t_->serialize(s_, nullptr, 0);
    const std::size_t at = out.size();
    out.resize(at + n);
    t_->serialize(s_, out.data() + at, n);
  }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    return t_->deserialize(s_, bytes.data(), bytes.size()) != 0;
  }
  std::uint64_t hash() const override {
    scratch_.clear();
    serialize(scratch_);
    return hash_bytes(scratch_);
  }
  std::uint32_t entity_count() const override { return t_->entity_count(s_); }
  std::uint64_t entity_hash(std::uint32_t entity) const override { return fields_hash(entity_fields(entity)); }
  std::vector<FieldValue> entity_fields(std::uint32_t entity) const override { return fields(entity); }
  std::vector<FieldValue> global_fields() const override { return fields(UINT32_MAX); }
  std::unique_ptr<Simulation> clone() const override {
    return std::make_unique<LibSimulation>(t_, t_->clone(s_), players_, fingerprint_);
  }
  void assign(const Simulation& other) override {
    const auto& o = dynamic_cast<const LibSimulation&>(other);
    t_->assign(s_, o.s_);
    fingerprint_ = o.fingerprint_;
  }
  std::uint64_t fingerprint() const override { return fingerprint_; }
  void draw(const Simulation& previous, float alpha, DrawList& out) const override {
    const auto& prev = dynamic_cast<const LibSimulation&>(previous);
    std::size_t n = t_->draw(s_, prev.s_, alpha, shapes_.data(), shapes_.size());
    if (n > shapes_.size()) {
      shapes_.resize(n);
      n = t_->draw(s_, prev.s_, alpha, shapes_.data(), shapes_.size());
    }
    out.clear();
    for (std::size_t i = 0; i < n && i < shapes_.size(); ++i) {
      const lockstep_shape& s = shapes_[i];
      DrawShape d;
      d.kind = static_cast<DrawShape::Kind>(std::min<std::uint32_t>(s.kind, 3));
      d.x = s.x, d.y = s.y, d.a = s.a, d.b = s.b;
      d.player = s.player;
      d.palette = static_cast<std::uint8_t>(s.palette % kPaletteSize);
      if (d.kind == DrawShape::Kind::Text && s.text) d.text = s.text;
      out.push_back(std::move(d));
    }
  }
  float width() const override { return t_->width(s_); }
  float height() const override { return t_->height(s_); }
  void perturb(std::uint64_t selector) override { t_->perturb(s_, selector); }
  const void* native_state() const override { return s_; }

  // The module's identity, version and build, with the ABI version.
  static std::uint64_t module_fingerprint(const Loaded& l) {
    return module_code_fingerprint(l.name, l.table->version, l.build_id, l.table->input_size);
  }

 private:
  std::vector<FieldValue> fields(std::uint32_t entity) const {
    std::vector<lockstep_field> raw(t_->fields(s_, entity, nullptr, 0));
    raw.resize(std::min(raw.size(), t_->fields(s_, entity, raw.data(), raw.size())));
    return field_values(raw);
  }
};

// The Module interface's plain functions, over the table of slot N.
template <std::size_t N>
bool lib_parse_world(std::string_view text, WorldParams* world, std::string* error) {
  const lockstep_module_v2* g_table = g_loaded[N].table;
  std::array<std::uint8_t, kMaxSettingsBytes> out{};
  std::array<char, 512> why{};
  std::size_t len = 0;
  const std::string t(text);
  if (!g_table->parse_world(t.c_str(), world->settings.data(), world->settings.size(), out.data(), out.size(), &len,
                            why.data(), why.size())) {
    why.back() = '\0';
    *error = why[0] ? why.data() : "the module refused the world settings";
    return false;
  }
  world->settings.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(std::min(len, out.size())));
  return true;
}

template <std::size_t N>
std::string lib_settings_text(std::span<const std::uint8_t> settings) {
  const lockstep_module_v2* g_table = g_loaded[N].table;
  std::array<char, 1024> buf{};
  const std::size_t n = g_table->settings_text(settings.data(), settings.size(), buf.data(), buf.size());
  buf.back() = '\0';
  return n == 0 ? "" : std::string(buf.data());
}

template <std::size_t N>
std::unique_ptr<Simulation> lib_create(const WorldParams& world) {
  const lockstep_module_v2* g_table = g_loaded[N].table;
  if (world.players < 1 || world.players > static_cast<std::uint32_t>(kMaxPlayers)) return nullptr;
  lockstep_sim* s = g_table->create(world.settings.data(), world.settings.size(), world.players);
  if (!s) return nullptr;
  return std::make_unique<LibSimulation>(g_table, s, world.players,
                                         world_fingerprint(LibSimulation::module_fingerprint(g_loaded[N]), world.settings));
}

// Commands the module issues, into the PlayerTick being filled.
int add_command(void* ctx, const std::uint8_t* bytes, std::size_t n) {
  auto* out = static_cast<PlayerTick*>(ctx);
  return bytes && out->commands.add(std::span<const std::uint8_t>(bytes, n)) ? 1 : 0;
}

// The module writes input_size bytes: give it a buffer of the full size whatever `out` holds.
template <std::size_t N>
void lib_bot(std::uint64_t seed, Tick tick, PlayerTick* out) {
  const lockstep_module_v2* g_table = g_loaded[N].table;
  out->input.resize(g_table->input_size, 0);
  std::array<std::uint8_t, kMaxInputBytes> in{};
  const lockstep_command_sink sink{out, &add_command};
  g_table->bot(seed, tick, in.data(), &sink);
  std::copy_n(in.begin(), g_table->input_size, out->input.begin());
}

template <std::size_t N>
void lib_controls(const Controls& c, ControlMemory& memory, PlayerTick* out) {
  const lockstep_module_v2* g_table = g_loaded[N].table;
  const lockstep_controls lc{c.held.to_ullong(),  c.pointer_valid ? 1 : 0, c.pointer_down ? 1 : 0,
                             c.secondary_down ? 1 : 0, c.pointer_x, c.pointer_y, c.world_width, c.world_height};
  out->input.resize(g_table->input_size, 0);
  std::array<std::uint8_t, kMaxInputBytes> in{};
  const lockstep_command_sink sink{out, &add_command};
  g_table->from_controls(&lc, memory.data(), in.data(), &sink);
  std::copy_n(in.begin(), g_table->input_size, out->input.begin());
}

// A text export's answer (at most 255 bytes).
std::string text_from(const auto& fn, const auto&... args) {
  std::array<char, 256> buf{};
  const std::size_t n = fn(args..., buf.data(), buf.size());
  buf.back() = '\0';
  return n == 0 ? std::string() : std::string(buf.data());
}
template <std::size_t N>
std::string lib_entity_kind(const Simulation& sim, std::uint32_t e) {
  return text_from(g_loaded[N].kind, static_cast<const lockstep_sim*>(sim.native_state()), e);
}
template <std::size_t N>
bool lib_entity_position(const Simulation& sim, std::uint32_t e, float* x, float* y) {
  return g_loaded[N].position(static_cast<const lockstep_sim*>(sim.native_state()), e, x, y) != 0;
}
template <std::size_t N>
std::string lib_input_text(std::span<const std::uint8_t> b) { return text_from(g_loaded[N].input_text, b.data(), b.size()); }
template <std::size_t N>
std::string lib_command_text(std::span<const std::uint8_t> b) { return text_from(g_loaded[N].command_text, b.data(), b.size()); }

// Slot n's functions into its Module (the optional ones where the library exports them).
template <std::size_t... N>
void bind_slot(std::size_t n, Module& m, std::index_sequence<N...>) {
  ((n == N ? (m.parse_world = &lib_parse_world<N>, m.settings_text = &lib_settings_text<N>, m.create = &lib_create<N>,
              m.bot = &lib_bot<N>, m.from_controls = &lib_controls<N>,
              m.entity_kind = g_loaded[N].kind ? &lib_entity_kind<N> : nullptr,
              m.entity_position = g_loaded[N].position ? &lib_entity_position<N> : nullptr,
              m.input_text = g_loaded[N].input_text ? &lib_input_text<N> : nullptr,
              m.command_text = g_loaded[N].command_text ? &lib_command_text<N> : nullptr, 0)
           : 0),
   ...);
}

// The first function a table lacks, or nullptr when it has them all.
const char* missing_function(const lockstep_module_v2& t) {
  const std::pair<const void*, const char*> fns[] = {
      {reinterpret_cast<const void*>(t.parse_world), "parse_world"}, {reinterpret_cast<const void*>(t.settings_text), "settings_text"},
      {reinterpret_cast<const void*>(t.create), "create"},           {reinterpret_cast<const void*>(t.destroy), "destroy"},
      {reinterpret_cast<const void*>(t.clone), "clone"},             {reinterpret_cast<const void*>(t.assign), "assign"},
      {reinterpret_cast<const void*>(t.tick), "tick"},               {reinterpret_cast<const void*>(t.step), "step"},
      {reinterpret_cast<const void*>(t.serialize), "serialize"},     {reinterpret_cast<const void*>(t.deserialize), "deserialize"},
      {reinterpret_cast<const void*>(t.entity_count), "entity_count"}, {reinterpret_cast<const void*>(t.fields), "fields"},
      {reinterpret_cast<const void*>(t.perturb), "perturb"},         {reinterpret_cast<const void*>(t.draw), "draw"},
      {reinterpret_cast<const void*>(t.width), "width"},             {reinterpret_cast<const void*>(t.height), "height"},
      {reinterpret_cast<const void*>(t.bot), "bot"},                 {reinterpret_cast<const void*>(t.from_controls), "from_controls"},
  };
  for (const auto& [fn, name] : fns)
    if (!fn) return name;
  return nullptr;
}

bool valid_module_name(const char* name) {
  if (!name) return false;
  const std::size_t n = std::strlen(name);
  if (n == 0 || n > 32) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

lockstep_frame c_frame(const InputFrame& frame, std::vector<lockstep_command>* commands) {
  commands->clear();
  for (std::size_t i = 0; i < frame.commands.size(); ++i)
    commands->push_back({frame.commands[i].slot, frame.commands[i].size, frame.command(i).data()});
  return lockstep_frame{frame.tick,    frame.present,    frame.filled,
                        frame.players, frame.input_size, frame.inputs.data(),
                        static_cast<std::uint32_t>(commands->size()), commands->data()};
}

std::vector<FieldValue> field_values(std::span<const lockstep_field> fields) {
  std::vector<FieldValue> out;
  for (const lockstep_field& f : fields)
    out.push_back({f.name ? f.name : "?", static_cast<FieldValue::Kind>(std::min<std::uint32_t>(f.kind, 3)), f.bits});
  return out;
}

std::uint64_t module_code_fingerprint(std::string_view name, std::uint32_t version, std::uint64_t build_id,
                                      std::uint32_t input_size) {
  std::vector<std::uint8_t> id(name.begin(), name.end());
  const std::uint64_t parts[] = {version, build_id, LOCKSTEP_MODULE_ABI_VERSION, input_size};
  const auto* p = reinterpret_cast<const std::uint8_t*>(parts);
  id.insert(id.end(), p, p + sizeof parts);
  return hash_bytes(id);
}

namespace {
const Module* install_table(const lockstep_module_v2* t, const std::string& path, std::string* error);
}  // namespace

const Module* load_module_library(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> const Module* {
    *error = "--sim-lib " + path + ": " + why;
    return nullptr;
  };
#if defined(__EMSCRIPTEN__)
  // WebAssembly loads no library built apart: a module is linked into the program instead
  // (replay/CMakeLists.txt, LOCKSTEP_LINKED_MODULES).
  return fail("WebAssembly loads no module library: link the module into the program (LOCKSTEP_LINKED_MODULES)");
#else
  if (const std::string bad = check_library_file(path); !bad.empty()) return fail(bad);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail(std::string("cannot load it: ") + dlerror());
  const auto entry = reinterpret_cast<lockstep_module_fn>(dlsym(lib, LOCKSTEP_MODULE_ENTRY));
  if (!entry) return fail("not a lockstep module: it has no " LOCKSTEP_MODULE_ENTRY "() entry point (module_abi.h)");
  const lockstep_module_v2* t = entry(LOCKSTEP_MODULE_ABI_VERSION);
  if (!t) return fail("the module cannot serve module ABI version " + std::to_string(LOCKSTEP_MODULE_ABI_VERSION));
  for (std::size_t i = 0; i < g_loaded_count; ++i)
    if (g_loaded[i].table == t) return &g_loaded[i].module;  // this library again (dlopen gave the same handle)
  if (g_loaded_count == kMaxLoaded) return fail("this process has loaded " + std::to_string(kMaxLoaded) + " modules already");
  std::string note, bad;
  std::vector<LibraryBuild> libraries = covered_libraries(lib, &note, &bad);
  if (!bad.empty()) return fail(bad);
  // Before the module runs: the libraries it routes call lockstep's math from their first call.
  std::string routed;
  module_lib::route_module_libraries(lib, &routed, &bad);
  if (!bad.empty()) return fail(bad);
  if (!routed.empty()) LOCKSTEP_LOG_INFO("--sim-lib %s: %s", path.c_str(), routed.c_str());
  const Module* m = install_table(t, path, error);
  if (!m) return m;
  Loaded& slot = g_loaded[g_loaded_count - 1];
  slot.kind = reinterpret_cast<lockstep_entity_kind_fn>(dlsym(lib, "lockstep_entity_kind"));
  slot.position = reinterpret_cast<lockstep_entity_position_fn>(dlsym(lib, "lockstep_entity_position"));
  slot.input_text = reinterpret_cast<lockstep_bytes_text_fn>(dlsym(lib, "lockstep_input_text"));
  slot.command_text = reinterpret_cast<lockstep_bytes_text_fn>(dlsym(lib, "lockstep_command_text"));
  bind_slot(g_loaded_count - 1, slot.module, std::make_index_sequence<kMaxLoaded>());
  slot.code = module_lib::module_code(lib, path);
  slot.module.fma_instructions = module_lib::fma_instructions(lib);
  std::string opted_out;
  module_lib::add_opted_out_code(libraries, &slot.code, &slot.module.fma_instructions, &opted_out);
  slot.module.code = slot.code;
  // Said where it is more than the file's build id (a module with no such library loads quietly,
  // as an embedding game may load one before it has a log sink).
  if (!opted_out.empty())
    LOCKSTEP_LOG_INFO("--sim-lib %s: machine code %s (%u fused multiply-adds; with the libraries it opts out: %s)",
                      path.c_str(), slot.code.c_str(), slot.module.fma_instructions, opted_out.c_str());
  if (libraries.empty()) return m;
  std::vector<LibraryBuild>& libs = slot.libraries;
  libs = std::move(libraries);
  slot.module.libraries = libs;
  LOCKSTEP_LOG_INFO("--sim-lib %s links %s", path.c_str(), note.c_str());
  // The covered libraries' builds join the build id: a peer with another build of one is another
  // module. With every library opted out the build id stays the table's.
  if (std::none_of(libs.begin(), libs.end(), [](const LibraryBuild& l) { return l.build != kOptedOut; }))
    return m;
  std::vector<std::uint8_t> bytes(8);
  std::memcpy(bytes.data(), &slot.build_id, 8);
  for (const LibraryBuild& l : libs) {
    if (l.build == kOptedOut) continue;
    bytes.insert(bytes.end(), l.name.begin(), l.name.end());
    bytes.push_back(0);
    bytes.insert(bytes.end(), l.build.begin(), l.build.end());
    bytes.push_back(0);
  }
  slot.build_id = hash_bytes(bytes);
  slot.module.build_id = slot.build_id;
  return m;
#endif
}

const Module* module_from_table(const lockstep_module_v2* table, std::string* error) {
  if (!table) {
    *error = "the module table is NULL";
    return nullptr;
  }
  if (table->build_id == 0) {
    *error = "a module table passed in-process needs a build_id (there is no library file to derive one from)";
    return nullptr;
  }
  return install_table(table, "", error);
}

namespace {

// Checks a module table and makes it this process's module; `path` names its library ("" for a
// table passed in-process).
const Module* install_table(const lockstep_module_v2* t, const std::string& path, std::string* error) {
  const std::string origin = path.empty() ? std::string("the module table") : "--sim-lib " + path;
  auto fail = [&](const std::string& why) -> const Module* {
    *error = origin + ": " + why;
    return nullptr;
  };
  for (std::size_t i = 0; i < g_loaded_count; ++i)
    if (g_loaded[i].table == t) return &g_loaded[i].module;  // the same library (or table) again
  if (g_loaded_count == kMaxLoaded) return fail("this process has loaded " + std::to_string(kMaxLoaded) + " modules already");
  if (t->abi_version != LOCKSTEP_MODULE_ABI_VERSION)
    return fail("the module speaks module ABI version " + std::to_string(t->abi_version) + "; this build speaks " +
                std::to_string(LOCKSTEP_MODULE_ABI_VERSION));
  if (!valid_module_name(t->name)) return fail("the module's name must be 1-32 of [a-z0-9_-]");
  if (const char* lacks = missing_function(*t)) return fail(std::string("the module's table has no ") + lacks + "()");
  if (t->input_size > kMaxInputBytes)
    return fail("the module's inputs are " + std::to_string(t->input_size) + " bytes; at most " +
                std::to_string(kMaxInputBytes) + " are carried");
  Loaded& l = g_loaded[g_loaded_count];
  std::uint64_t build_id = t->build_id;
  if (build_id == 0) {
    // No build id: the library's own bytes stand in, so two builds of other code never meet in a
    // session. Peers then need this very file (another compiler or architecture is another file).
    const std::optional<std::uint64_t> h = file_hash(path);
    if (!h) return fail("cannot read the library to derive its build id (the table's build_id is 0)");
    build_id = *h;
    LOCKSTEP_LOG_INFO("%s: build_id is 0, so the fingerprint follows the library file's bytes (%s); "
                      "lockstep_add_module derives one from the sources instead", origin.c_str(),
                      hash_hex(build_id).c_str());
  }
  l.build_id = build_id;
  l.table = t;
  l.name = t->name;
  l.description = t->description ? t->description : "";
  l.controls_help = t->controls_help ? t->controls_help : "";
  l.golden = t->golden_world ? t->golden_world : "";
  Module& m = l.module;
  m.name = l.name;
  m.version = t->version;
  m.build_id = l.build_id;
  m.description = l.description;
  bind_slot(g_loaded_count, m, std::make_index_sequence<kMaxLoaded>());
  m.controls_help = l.controls_help;
  m.input_size = t->input_size;
  m.golden_world = l.golden;
  ++g_loaded_count;
  return &m;
}

}  // namespace

}  // namespace lockstep
