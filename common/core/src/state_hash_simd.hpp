// The AVX2 build of XXH3 (state_hash_avx2.cpp, compiled with -mavx2 on x86-64 only).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && defined(LOCKSTEP_AVX2_HASH)
#define LOCKSTEP_HAVE_AVX2_HASH 1
namespace lockstep::detail {
void xxh3_update_avx2(void* state, const void* data, std::size_t n);
std::uint64_t xxh3_avx2(const void* data, std::size_t n);
}  // namespace lockstep::detail
#else
#define LOCKSTEP_HAVE_AVX2_HASH 0
#endif
