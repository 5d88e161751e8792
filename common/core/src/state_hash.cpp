// XXH3-64 over canonical bytes, fed piece by piece (state_hash.hpp).
#include "lockstep/state_hash.hpp"

// xxHash is used header-only (inlined): the same code on every target, no library to cross-build.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cassert>
#include <cstdio>
#include <vector>

#include "state_hash_simd.hpp"

namespace lockstep {

std::uint64_t world_fingerprint(std::uint64_t code, std::span<const std::uint8_t> settings) {
  std::vector<std::uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(code >> (8 * i));
  bytes.insert(bytes.end(), settings.begin(), settings.end());
  return hash_bytes(bytes);
}
namespace {

// XXH3 gives the same result on every vector path; only the speed differs. On x86-64 the AVX2
// path (compiled separately with -mavx2) is taken when the CPU has it.
void update_default(void* state, const void* data, std::size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, n);
}
std::uint64_t oneshot_default(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

struct Paths {
  void (*update)(void*, const void*, std::size_t);
  std::uint64_t (*oneshot)(const void*, std::size_t);
};

Paths pick() {
#if LOCKSTEP_HAVE_AVX2_HASH
  if (__builtin_cpu_supports("avx2")) return {&detail::xxh3_update_avx2, &detail::xxh3_avx2};
#endif
  return {&update_default, &oneshot_default};
}

const Paths& paths() {
  static const Paths p = pick();
  return p;
}

}  // namespace

StateHasher::StateHasher() : state_(XXH3_createState()) {
  assert(state_ != nullptr);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

StateHasher::~StateHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StateHasher::update(const void* data, std::size_t n) { paths().update(state_, data, n); }

std::uint64_t StateHasher::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

std::uint64_t hash_bytes(std::span<const std::uint8_t> bytes) { return paths().oneshot(bytes.data(), bytes.size()); }

std::uint64_t hash_bytes_portable(std::span<const std::uint8_t> bytes) { return oneshot_default(bytes.data(), bytes.size()); }

std::string hash_hex(std::uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::optional<std::uint64_t> parse_hash_hex(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : text) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

}  // namespace lockstep
