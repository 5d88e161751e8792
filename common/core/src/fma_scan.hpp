// Fused multiply-adds in a loaded module's machine code, for module_lib.cpp: a build with FMA
// contraction computes other results than one without, and a join refusal says so by count.
#pragma once

#include <cstdint>

namespace lockstep::module_lib {

/// The fused multiply-add instructions in the executable segments of the loaded object `lib` (a
/// dlopen handle): FMA3 on x86-64 (VEX-encoded, found byte by byte), FMADD/FMSUB/FNMADD/FNMSUB
/// and vector FMLA/FMLS on aarch64. 0 in a page (no library files).
std::uint32_t fma_instructions(void* lib);

}  // namespace lockstep::module_lib
