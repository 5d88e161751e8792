// Fused multiply-adds in a loaded module's machine code (fma_scan.hpp): its executable segments
// read in memory, the instructions counted by their encodings. Built with FMA contraction, a
// module computes other results than a build without it, and a join refusal names it by this.
#include "fma_scan.hpp"

#include <cstdint>

#if defined(__EMSCRIPTEN__)

namespace lockstep::module_lib {
std::uint32_t fma_instructions(void*) { return 0; }  // a page loads no library file
}  // namespace lockstep::module_lib

#else

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "loaded_segments.hpp"

namespace lockstep::module_lib {

namespace {

#if defined(__aarch64__)
// Fixed 4-byte instructions: FMADD, FMSUB, FNMADD, FNMSUB (floating-point data-processing, three
// sources), and FMLA and FMLS on vectors.
std::uint32_t count_in(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0;
  for (std::size_t i = 0; i + 4 <= n; i += 4) {
    std::uint32_t w;
    std::memcpy(&w, p + i, 4);
    if ((w & 0xff000000u) == 0x1f000000u || (w & 0x9fa0fc00u) == 0x0e20cc00u || (w & 0x9fa0fc00u) == 0x0ea0cc00u) ++c;
  }
  return c;
}
#else
// x86-64: the FMA3 instructions' VEX encoding, C4, then the 0F38 map, the 66 prefix and an opcode
// of 96-9F, A6-AF or B6-BF (vfmadd, vfmsub, vfnmadd, vfnmsub and their add/sub forms). Read
// byte by byte, not decoded: an immediate that happens to look like one is counted too, rarely.
std::uint32_t count_in(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0;
  for (std::size_t i = 0; i + 4 <= n; ++i) {
    if (p[i] != 0xc4 || (p[i + 1] & 0x1f) != 0x02 || (p[i + 2] & 0x03) != 0x01) continue;
    const unsigned op = p[i + 3], low = op & 0x0f, high = op >> 4;
    if ((high == 0x9 || high == 0xa || high == 0xb) && low >= 0x6) ++c;
  }
  return c;
}
#endif

}  // namespace

std::uint32_t fma_instructions(void* lib) {
  link_map* lm = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return 0;
  std::uint32_t count = 0;
  for_each_segment(lm->l_addr, [&](const ElfW(Phdr)& ph, ElfW(Addr) bias) {
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && (ph.p_flags & PF_R))
      count += count_in(reinterpret_cast<const std::uint8_t*>(bias + ph.p_vaddr), ph.p_filesz);
  });
  return count;
}

}  // namespace lockstep::module_lib

#endif
