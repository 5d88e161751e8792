#include "lockstep/state_hash.hpp"

// xxHash is used header-only (inlined): the same code on every target, no library to cross-build.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cassert>
#include <cstdio>

namespace lockstep {

StateHasher::StateHasher() : state_(XXH3_createState()) {
  assert(state_ != nullptr);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

StateHasher::~StateHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StateHasher::update(const void* data, std::size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
}

std::uint64_t StateHasher::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

std::uint64_t hash_bytes(std::span<const std::uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::string hash_hex(std::uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace lockstep
