// XXH3 with its AVX2 inner loop. Same results as the default path, bit for bit (xxHash
// guarantees it, and the golden tests check it); only called when the CPU has AVX2.
#define XXH_INLINE_ALL
#define XXH_VECTOR 2  // XXH_AVX2
#include <xxhash.h>

#include "state_hash_simd.hpp"

namespace lockstep::detail {

void xxh3_update_avx2(void* state, const void* data, std::size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, n);
}

std::uint64_t xxh3_avx2(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

}  // namespace lockstep::detail
