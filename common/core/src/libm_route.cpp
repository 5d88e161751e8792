// A linked engine's libm calls sent to lockstep's math (libm_route.hpp): a library the module
// names (lockstep_add_module(... ROUTED libbox2d)) has its imports of libm's transcendentals
// rebound, in this process, to lockstep/detmath.h's functions of the same meaning, which give the
// same bits on every CPU and architecture. The rebinding writes the library's own GOT slots (the
// ones the dynamic linker filled with libm's addresses), so it reaches a prebuilt library whose
// source the team does not build, and nothing else in the process: not the game's own calls, not
// another library's.
#include "libm_route.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "lockstep/detmath.h"

#if defined(__EMSCRIPTEN__)

namespace lockstep::module_lib {
bool route_libm(const std::string& soname, RoutedLibrary*, std::string* error) {
  *error = "cannot route " + soname + "'s libm calls: a page loads no shared library";
  return false;
}
}  // namespace lockstep::module_lib

#else

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loaded_segments.hpp"

namespace lockstep::module_lib {

namespace {

#if defined(__x86_64__)
constexpr unsigned kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr unsigned kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "libm_route.cpp: name this architecture's PLT and GOT relocations"
#endif

struct Route {
  const char* name;
  void* to;
};

template <typename F>
void* fn(F* f) {
  return reinterpret_cast<void*>(f);
}

// libm's transcendentals and lockstep's functions of the same signature and meaning (the ones
// lockstep-lint reports as libm). The exact ones (sqrt, floor, fmod, ...) are exact in every libm
// and stay libm's.
const Route kRoutes[] = {
    {"sinf", fn(lockstep_sinf)},   {"cosf", fn(lockstep_cosf)},     {"sincosf", fn(lockstep_sincosf)},
    {"tanf", fn(lockstep_tanf)},   {"asinf", fn(lockstep_asinf)},   {"acosf", fn(lockstep_acosf)},
    {"atanf", fn(lockstep_atanf)}, {"atan2f", fn(lockstep_atan2f)}, {"expf", fn(lockstep_expf)},
    {"exp2f", fn(lockstep_exp2f)}, {"logf", fn(lockstep_logf)},     {"log2f", fn(lockstep_log2f)},
    {"powf", fn(lockstep_powf)},   {"hypotf", fn(lockstep_hypotf)}, {"sin", fn(lockstep_sin)},
    {"cos", fn(lockstep_cos)},     {"sincos", fn(lockstep_sincos)}, {"tan", fn(lockstep_tan)},
    {"asin", fn(lockstep_asin)},   {"acos", fn(lockstep_acos)},     {"atan", fn(lockstep_atan)},
    {"atan2", fn(lockstep_atan2)}, {"exp", fn(lockstep_exp)},       {"exp2", fn(lockstep_exp2)},
    {"log", fn(lockstep_log)},     {"log2", fn(lockstep_log2)},     {"pow", fn(lockstep_pow)},
    {"hypot", fn(lockstep_hypot)},
};

void* route_for(const char* name) {
  for (const Route& r : kRoutes)
    if (std::strcmp(r.name, name) == 0) return r.to;
  return nullptr;
}

// A libm transcendental lockstep has no function for (sinh, log10, cbrt, ...): left as it is, and
// named, so that the team knows its calls still differ by machine (lockstep-lint reports them too).
bool is_other_transcendental(std::string_view n) {
  if (n.size() > 1 && n.back() == 'f') n.remove_suffix(1);
  for (const char* t : {"sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp10", "expm1", "log10", "log1p", "logb",
                        "cbrt", "erf", "erfc", "lgamma", "tgamma", "pow10"})
    if (n == t) return true;
  return false;
}

struct Relro {
  std::uintptr_t begin = 0, end = 0;
};

// Where the object whose load bias is `base` keeps its read-only-after-relocation segment.
Relro relro_of(ElfW(Addr) base) {
  Relro r;
  for_each_segment(base, [&](const ElfW(Phdr)& ph, ElfW(Addr) bias) {
    if (ph.p_type != PT_GNU_RELRO) return;
    r.begin = bias + ph.p_vaddr;
    r.end = r.begin + ph.p_memsz;
  });
  return r;
}

// One pointer-sized slot set to `to`; a slot in the read-only-after-relocation segment (RELRO,
// where a library linked with -z now keeps its GOT) is made writable for the write and read-only
// again after.
bool write_slot(std::uintptr_t slot, void* to, const Relro& relro) {
  const bool in_relro = slot >= relro.begin && slot + sizeof(void*) <= relro.end;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  void* first = reinterpret_cast<void*>(slot & ~(page - 1));
  const std::size_t span = (slot + sizeof(void*)) - (slot & ~(page - 1));
  if (in_relro && mprotect(first, span, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(reinterpret_cast<void**>(slot), to, __ATOMIC_RELEASE);
  if (in_relro) mprotect(first, span, PROT_READ);
  return true;
}

}  // namespace

bool route_libm(const std::string& soname, RoutedLibrary* out, std::string* error) {
  out->name = soname;
  void* h = dlopen(soname.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  link_map* lm = nullptr;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) {
    if (h) dlclose(h);
    *error = "cannot route " + soname + "'s libm calls: it is not loaded in this process";
    return false;
  }
  const ElfW(Addr) base = lm->l_addr;
  auto at = [base](ElfW(Addr) p) { return p < base ? p + base : p; };  // where the dynamic section keeps offsets
  ElfW(Addr) strtab = 0, symtab = 0, jmprel = 0, rela = 0;
  std::size_t pltrelsz = 0, relasz = 0;
  ElfW(Sxword) pltrel = DT_RELA;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_STRTAB: strtab = at(d->d_un.d_ptr); break;
      case DT_SYMTAB: symtab = at(d->d_un.d_ptr); break;
      case DT_JMPREL: jmprel = at(d->d_un.d_ptr); break;
      case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
      case DT_PLTREL: pltrel = static_cast<ElfW(Sxword)>(d->d_un.d_val); break;
      case DT_RELA: rela = at(d->d_un.d_ptr); break;
      case DT_RELASZ: relasz = d->d_un.d_val; break;
      default: break;
    }
  }
  if (strtab == 0 || symtab == 0 || pltrel != DT_RELA) {
    dlclose(h);
    *error = "cannot route " + soname + "'s libm calls: its dynamic section has no symbol table or RELA relocations";
    return false;
  }
  const Relro relro = relro_of(base);
  const auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
  const auto* names = reinterpret_cast<const char*>(strtab);
  bool ok = true;
  auto walk = [&](ElfW(Addr) table, std::size_t bytes) {
    const auto* r = reinterpret_cast<const ElfW(Rela)*>(table);
    for (std::size_t i = 0; table != 0 && i < bytes / sizeof(ElfW(Rela)); ++i) {
      const unsigned type = ELF64_R_TYPE(r[i].r_info);
      if (type != kJumpSlot && type != kGlobDat) continue;
      const ElfW(Sym)& s = syms[ELF64_R_SYM(r[i].r_info)];
      if (s.st_shndx != SHN_UNDEF) continue;  // its own function, not an import
      const char* name = names + s.st_name;
      void* to = route_for(name);
      if (!to) {
        if (is_other_transcendental(name)) out->left.emplace_back(name);
        continue;
      }
      if (!write_slot(base + r[i].r_offset, to, relro)) {
        *error = "cannot route " + soname + "'s " + name + ": its GOT slot cannot be written (" + std::strerror(errno) + ")";
        ok = false;
        return;
      }
      out->routed.emplace_back(name);
    }
  };
  walk(jmprel, pltrelsz);
  if (ok) walk(rela, relasz);
  dlclose(h);
  // A function both called (its PLT slot) and taken as a pointer (a GOT slot) is one name.
  for (auto* list : {&out->routed, &out->left}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return ok;
}

}  // namespace lockstep::module_lib

#endif
