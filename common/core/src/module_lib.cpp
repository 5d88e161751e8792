// Modules from shared libraries (--sim-lib FILE.so): the C table of module_abi.h behind the
// Simulation and Module interfaces. One library per process; it stays loaded until exit.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <utility>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "lockstep/bytes.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/module_abi.h"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {

// The hash of a whole file's bytes; nullopt when it cannot be read or is empty.
std::optional<std::uint64_t> file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return std::nullopt;
  return hash_bytes(bytes);
}

#if defined(__x86_64__)
constexpr unsigned EM_HOST = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned EM_HOST = EM_AARCH64;
#elif defined(__i386__)
constexpr unsigned EM_HOST = EM_386;
#elif defined(__EMSCRIPTEN__)
constexpr unsigned EM_HOST = EM_NONE;  // a page loads no native library: each is refused as another machine's
#else
#error "module_lib.cpp: name this architecture's ELF machine"
#endif

// The modules this process loaded: a few, so that two builds of one module can be compared in one
// process (`lockstep-replay bisect`). Module's functions are plain pointers, so each slot has its
// own instances of them (lib_create<N>, ...).
struct Loaded {
  const lockstep_module_v2* table = nullptr;
  std::string name, description, controls_help, golden;
  std::uint64_t build_id = 0;  // the table's build_id (or the library file's hash), and the libraries it covers
  std::vector<LibraryBuild> libraries;  // the libraries the fingerprint covers
  Module module;
};
constexpr std::size_t kMaxLoaded = 4;
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

// Slot n's functions into its Module.
template <std::size_t... N>
void bind_slot(std::size_t n, Module& m, std::index_sequence<N...>) {
  ((n == N ? (m.parse_world = &lib_parse_world<N>, m.settings_text = &lib_settings_text<N>, m.create = &lib_create<N>,
              m.bot = &lib_bot<N>, m.from_controls = &lib_controls<N>, 0)
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

namespace {

// The C and C++ runtimes, which every module links and no fingerprint covers: their math is the
// lint's concern (libm transcendentals), and a peer's glibc is its system's.
bool is_runtime(std::string_view soname) {
  // The same list as lockstep-lint's (is_runtime there).
  for (const char* r : {"libc.so", "libm.so", "libmvec.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libpthread.so",
                        "libdl.so", "librt.so", "libutil.so"})
    if (soname.substr(0, std::strlen(r)) == r) return true;
  return false;
}

// A listed opt-out ("libbox2d" or "libbox2d.so.2.4") matches the soname it names or starts it.
bool uncovered(std::string_view soname, std::string_view list) {
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(';'), list.size());
    const std::string_view item = list.substr(0, end);
    list.remove_prefix(std::min(list.size(), end + 1));
    if (item.empty()) continue;
    if (soname == item || (soname.substr(0, item.size()) == item && soname.size() > item.size() &&
                           soname[item.size()] == '.'))
      return true;
  }
  return false;
}

constexpr const char* kOptedOut = "opted out";  // a library listed, its build left out of the fingerprint

struct NoteSearch {
  ElfW(Addr) base;
  std::string build;  // hex of the NT_GNU_BUILD_ID note, "" when none
};

// The GNU build id of the loaded object at `base`, from its PT_NOTE segments in memory.
int find_build_id(dl_phdr_info* info, std::size_t, void* data) {
  auto* q = static_cast<NoteSearch*>(data);
  if (info->dlpi_addr != q->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const std::uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    std::size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= ph.p_memsz) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p + at, sizeof n);
      const std::size_t name_at = at + sizeof n, desc_at = name_at + ((n.n_namesz + 3u) & ~3u);
      const std::size_t next = desc_at + ((n.n_descsz + 3u) & ~3u);
      if (next > ph.p_memsz) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0) {
        q->build = bytes_hex({p + desc_at, n.n_descsz});
        return 1;
      }
      at = next;
    }
  }
  return 1;
}

// The libraries a loaded module asks for (its DT_NEEDED entries) other than the runtimes and those
// it opts out of, each with its build: the GNU build id of the copy this process loaded, or the
// XXH3 of that file's bytes when it has no build id.
std::vector<LibraryBuild> covered_libraries(void* lib, std::string* note, std::string* error) {
  std::vector<LibraryBuild> out;
  link_map* lm = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) return out;
  const auto* opt_out = static_cast<const char*>(dlsym(lib, "lockstep_uncovered_libraries"));
  ElfW(Addr) strtab = 0;
  std::vector<ElfW(Xword)> needed;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
    if (d->d_tag == DT_NEEDED) needed.push_back(d->d_un.d_val);
  }
  if (strtab == 0) return out;
  if (strtab < lm->l_addr) strtab += lm->l_addr;  // where the dynamic section keeps offsets
  // Every name the module opts out of must match a library it links: a name that matches none
  // ("box2d" for libbox2d.so.2) would leave the library it meant in the fingerprint unnoticed.
  if (opt_out) {
    std::string_view list(opt_out);
    std::string links;
    for (const ElfW(Xword) off : needed) {
      const char* soname = reinterpret_cast<const char*>(strtab + off);
      if (!is_runtime(soname)) links += (links.empty() ? "" : ", ") + std::string(soname);
    }
    while (!list.empty()) {
      const std::size_t end = std::min(list.find(';'), list.size());
      const std::string item(list.substr(0, end));
      list.remove_prefix(std::min(list.size(), end + 1));
      if (item.empty()) continue;
      bool matched = false;
      for (const ElfW(Xword) off : needed) matched = matched || uncovered(reinterpret_cast<const char*>(strtab + off), item);
      if (!matched) {
        *error = "its UNCOVERED list names \"" + item + "\", which is no library it links (" +
                 (links.empty() ? std::string("it links none besides the C and C++ runtimes")
                                : "it links " + links + "; name the soname or its start, as \"libbox2d\" for libbox2d.so.2") +
                 ")";
        return {};
      }
    }
  }
  for (const ElfW(Xword) off : needed) {
    const std::string soname(reinterpret_cast<const char*>(strtab + off));
    if (is_runtime(soname)) continue;
    // What a JoinRequest and a replay can carry, so every peer compares the same list.
    if (soname.size() > kMaxLibraryNameBytes) {
      *error = "it links a library whose name is over " + std::to_string(kMaxLibraryNameBytes) + " bytes (" +
               soname.substr(0, 40) + "...)";
      return {};
    }
    if (out.size() == kMaxLibraries) {
      *error = "it links more than " + std::to_string(kMaxLibraries) +
               " libraries besides the C and C++ runtimes; a fingerprint names at most " + std::to_string(kMaxLibraries);
      return {};
    }
    if (opt_out && uncovered(soname, opt_out)) {
      *note += (note->empty() ? "" : ", ") + soname + " (opted out: its build is not in the fingerprint)";
      out.push_back({soname, kOptedOut});
      continue;
    }
    void* h = dlopen(soname.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    link_map* dep = nullptr;
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &dep) != 0 || !dep) {
      if (h) dlclose(h);
      continue;
    }
    NoteSearch q{dep->l_addr, ""};
    dl_iterate_phdr(find_build_id, &q);
    std::string build = q.build;
    if (build.size() > kMaxLibraryBuildBytes) build = "xxh3:" + hash_hex(hash_bytes({reinterpret_cast<const std::uint8_t*>(build.data()),
                                                                   build.size()}));
    if (build.empty()) {
      const std::optional<std::uint64_t> bytes_hash = file_hash(dep->l_name);
      build = bytes_hash ? "xxh3:" + hash_hex(*bytes_hash) : "unreadable";
    }
    dlclose(h);
    *note += (note->empty() ? "" : ", ") + soname + " (build " + build + ")";
    out.push_back({soname, build});
  }
  std::sort(out.begin(), out.end(), [](const LibraryBuild& a, const LibraryBuild& b) { return a.name < b.name; });
  return out;
}

}  // namespace

namespace {

// dlopen maps what a file's headers claim, and a truncated file faults (SIGBUS) when the loader
// touches a page past its end; a library of another architecture gets the loader's "No such
// file". Checked first: an ELF shared object of this process's class and machine, whose segments
// and section headers lie inside the file. (A library that passes is still code the process runs:
// load only modules you trust.)
std::string check_library_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::string("cannot load it: ") + std::strerror(errno);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  ElfW(Ehdr) eh{};
  if (size < sizeof eh || !in.read(reinterpret_cast<char*>(&eh), sizeof eh))
    return "not a shared library: " + std::to_string(size) + " bytes, shorter than an ELF header";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "not a shared library: no ELF header";
  const char* const arch = sizeof(void*) == 8 ? (EM_HOST == EM_AARCH64 ? "aarch64" : "x86-64") : "32-bit";
  auto machine = [](unsigned m) -> std::string {
    return m == EM_X86_64 ? "x86-64" : m == EM_AARCH64 ? "aarch64" : m == EM_386 ? "x86" : "machine " + std::to_string(m);
  };
  if (eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_machine != EM_HOST)
    return "built for " + machine(eh.e_machine) + ", and this process is " + arch;
  if (eh.e_type != ET_DYN) return "an ELF file, but not a shared library (build it as a MODULE or SHARED library)";
  if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phoff > size ||
      std::uint64_t{eh.e_phnum} * sizeof(ElfW(Phdr)) > size - eh.e_phoff)
    return "truncated or damaged: its program headers lie outside the file";
  in.seekg(static_cast<std::streamoff>(eh.e_phoff));
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph{};
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return "truncated: cannot read its program headers";
    if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
      return "truncated or damaged: a segment runs past the end of the file (" + std::to_string(size) + " bytes)";
  }
  if (eh.e_shoff != 0 && (eh.e_shoff > size || std::uint64_t{eh.e_shnum} * eh.e_shentsize > size - eh.e_shoff))
    return "truncated or damaged: its section headers lie outside the file";
  return "";
}

}  // namespace

const Module* load_module_library(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> const Module* {
    *error = "--sim-lib " + path + ": " + why;
    return nullptr;
  };
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
  const Module* m = install_table(t, path, error);
  if (!m || libraries.empty()) {
    return m;
  }
  Loaded& slot = g_loaded[g_loaded_count - 1];
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
