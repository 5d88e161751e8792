// What a module's library file is and links (library_file.hpp): its ELF headers checked before
// dlopen maps it, and the builds of the libraries it links, which its fingerprint covers.
#include "library_file.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "fma_scan.hpp"
#include "loaded_segments.hpp"
#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep::module_lib {

namespace {

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

}  // namespace

// The hash of a whole file's bytes; nullopt when it cannot be read or is empty.
std::optional<std::uint64_t> file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return std::nullopt;
  return hash_bytes(bytes);
}

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


// The GNU build id of the loaded object whose load bias is `base`, from its PT_NOTE segments in
// memory: hex, "" when it has none.
std::string build_id_of(ElfW(Addr) base) {
  std::string build;
  for_each_segment(base, [&](const ElfW(Phdr)& ph, ElfW(Addr) bias) {
    if (ph.p_type != PT_NOTE || !build.empty()) return;
    const auto* p = reinterpret_cast<const std::uint8_t*>(bias + ph.p_vaddr);
    std::size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= ph.p_memsz) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p + at, sizeof n);
      const std::size_t name_at = at + sizeof n, desc_at = name_at + ((n.n_namesz + 3u) & ~3u);
      const std::size_t next = desc_at + ((n.n_descsz + 3u) & ~3u);
      if (next > ph.p_memsz) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0) {
        build = bytes_hex({p + desc_at, n.n_descsz});
        return;
      }
      at = next;
    }
  });
  return build;
}

// The build of the library `soname` as this process loaded it: its GNU build id, or "xxh3:" and
// the hash of its file's bytes when it has none; "" when it is not loaded. `fma`, when given,
// gets its fused multiply-adds.
std::string loaded_build(const std::string& soname, std::uint32_t* fma) {
  void* h = dlopen(soname.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  link_map* dep = nullptr;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &dep) != 0 || !dep) {
    if (h) dlclose(h);
    return "";
  }
  std::string build = build_id_of(dep->l_addr);
  if (build.size() > kMaxLibraryBuildBytes)
    build = "xxh3:" + hash_hex(hash_bytes({reinterpret_cast<const std::uint8_t*>(build.data()), build.size()}));
  if (build.empty()) {
    const std::optional<std::uint64_t> bytes_hash = file_hash(dep->l_name);
    build = bytes_hash ? "xxh3:" + hash_hex(*bytes_hash) : "unreadable";
  }
  if (fma) *fma = fma_instructions(h);
  dlclose(h);
  return build;
}

}  // namespace

// The libraries a loaded module asks for (its DT_NEEDED entries) other than the runtimes and those
// it opts out of, each with its build: the GNU build id of the copy this process loaded, or the
// XXH3 of that file's bytes when it has no build id.
namespace {

// The sonames a loaded module asks for (its DT_NEEDED entries), in its order.
std::vector<std::string> needed_libraries(void* lib) {
  std::vector<std::string> out;
  link_map* lm = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) return out;
  ElfW(Addr) strtab = 0;
  std::vector<ElfW(Xword)> needed;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
    if (d->d_tag == DT_NEEDED) needed.push_back(d->d_un.d_val);
  }
  if (strtab == 0) return out;
  if (strtab < lm->l_addr) strtab += lm->l_addr;  // where the dynamic section keeps offsets
  for (const ElfW(Xword) off : needed) out.emplace_back(reinterpret_cast<const char*>(strtab + off));
  return out;
}

// Every name in a module's list (UNCOVERED or ROUTED, ';'-separated) must match a library it
// links: a name that matches none ("box2d" for libbox2d.so.2) would leave the library it meant
// as it was, unnoticed. "" when each does, else why not.
std::string check_list(std::string_view list, const char* option, const std::vector<std::string>& needed) {
  std::string links;
  for (const std::string& soname : needed)
    if (!is_runtime(soname)) links += (links.empty() ? "" : ", ") + soname;
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(';'), list.size());
    const std::string item(list.substr(0, end));
    list.remove_prefix(std::min(list.size(), end + 1));
    if (item.empty()) continue;
    if (std::none_of(needed.begin(), needed.end(), [&](const std::string& soname) { return uncovered(soname, item); }))
      return std::string("its ") + option + " list names \"" + item + "\", which is no library it links (" +
             (links.empty() ? std::string("it links none besides the C and C++ runtimes")
                            : "it links " + links + "; name the soname or its start, as \"libbox2d\" for libbox2d.so.2") +
             ")";
  }
  return "";
}

}  // namespace

std::string module_code(void* lib, const std::string& path) {
  link_map* lm = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
    const std::string build = build_id_of(lm->l_addr);
    if (!build.empty() && build.size() <= kMaxLibraryBuildBytes) return build;
  }
  const std::optional<std::uint64_t> h = file_hash(path);
  return h ? "xxh3:" + hash_hex(*h) : "";
}

std::vector<RoutedLibrary> route_module_libraries(void* lib, std::string* note, std::string* error) {
  std::vector<RoutedLibrary> out;
  const auto* list = static_cast<const char*>(dlsym(lib, "lockstep_routed_libraries"));
  if (!list) return out;
  const std::vector<std::string> needed = needed_libraries(lib);
  if (std::string bad = check_list(list, "ROUTED", needed); !bad.empty()) {
    *error = bad;
    return {};
  }
  for (const std::string& soname : needed) {
    if (is_runtime(soname) || !uncovered(soname, list)) continue;
    RoutedLibrary r;
    if (!route_libm(soname, &r, error)) return {};
    std::string names;
    for (const std::string& n : r.routed) names += (names.empty() ? "" : ", ") + n;
    *note += (note->empty() ? "" : "; ") + soname + ": " +
             (names.empty() ? std::string("imports none of libm's transcendentals") : "its " + names + " routed to lockstep's math");
    if (!r.left.empty()) {
      std::string left;
      for (const std::string& n : r.left) left += (left.empty() ? "" : ", ") + n;
      *note += " (left on libm, lockstep has no such function: " + left + ")";
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<LibraryBuild> covered_libraries(void* lib, std::string* note, std::string* error) {
  std::vector<LibraryBuild> out;
  const auto* opt_out = static_cast<const char*>(dlsym(lib, "lockstep_uncovered_libraries"));
  const std::vector<std::string> needed = needed_libraries(lib);
  if (opt_out) {
    if (std::string bad = check_list(opt_out, "UNCOVERED", needed); !bad.empty()) {
      *error = bad;
      return {};
    }
  }
  for (const std::string& soname : needed) {
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
    std::string build = loaded_build(soname, nullptr);
    if (build.empty()) continue;
    *note += (note->empty() ? "" : ", ") + soname + " (build " + build + ")";
    out.push_back({soname, build});
  }
  std::sort(out.begin(), out.end(), [](const LibraryBuild& a, const LibraryBuild& b) { return a.name < b.name; });
  return out;
}

void add_opted_out_code(const std::vector<LibraryBuild>& libraries, std::string* code, std::uint32_t* fma,
                        std::string* note) {
  std::string bytes = *code;
  bool any = false;
  for (const LibraryBuild& l : libraries) {
    if (l.build != kOptedOut) continue;
    std::uint32_t its_fma = 0;
    std::string build = loaded_build(l.name, &its_fma);
    if (build.empty()) build = "not loaded";
    bytes += '\0' + l.name + '\0' + build;
    *fma += its_fma;
    *note += (note->empty() ? "" : ", ") + l.name + " (build " + build + ", " + std::to_string(its_fma) +
             " fused multiply-adds)";
    any = true;
  }
  if (any) *code = "xxh3:" + hash_hex(hash_bytes({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
}

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

}  // namespace lockstep::module_lib
