// The program headers of one object this process loaded, for the loader's readers of a module's
// memory (library_file.cpp: its build id; libm_route.cpp: its RELRO segment; fma_scan.cpp: its
// code): dl_iterate_phdr narrowed to the object whose load bias is `base` (link_map::l_addr).
#pragma once

#include <link.h>

#include <cstddef>

namespace lockstep::module_lib {

/// Calls f(phdr, load_bias) for each program header of the loaded object whose load bias is
/// `base`; nothing when no loaded object has it.
template <typename F>
void for_each_segment(ElfW(Addr) base, F f) {
  struct Ctx {
    ElfW(Addr) base;
    F* f;
  } ctx{base, &f};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        if (info->dlpi_addr != c->base) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) (*c->f)(info->dlpi_phdr[i], info->dlpi_addr);
        return 1;
      },
      &ctx);
}

}  // namespace lockstep::module_lib
