// A connect token file's layout (docs/PROTOCOL.md §4.6), read without its checks: pure byte work,
// shared by read_connect_token (which checks each part's BLAKE2b with libsodium) and the web build
// (which has no libsodium, and leaves a damaged token to the server to refuse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "lockstep/bytes.hpp"
#include "lockstep/connect_token.hpp"

namespace lockstep {

inline constexpr std::uint8_t kTokenFileMagic[4] = {'L', 'S', 'C', 'T'};
inline constexpr std::size_t kSealedHeaderBytes = 25;  // version, protocol id, create and expire time: the AD
inline constexpr std::size_t kTokenNonceBytes = 24, kTokenTagBytes = 16;

/// The three parts of a token file each check covers, and the checks (empty in format 1).
struct TokenFileParts {
  std::span<const std::uint8_t> header, keys, sealed, checks;
};

/// Reads `n` server addresses (a token file's list, and a sealed part's); false when one has port 0,
/// n is out of range or the bytes run out.
bool read_token_addresses(ByteReader& r, std::size_t n, std::vector<TokenAddress>* out);

/// Reads a token file's bytes (not base64) into `out` and `parts`; false with a sentence in `error`
/// when it is not a token file of a known format or its lengths do not add up.
bool parse_connect_token(std::span<const std::uint8_t> bytes, ConnectToken* out, TokenFileParts* parts, std::string* error);

}  // namespace lockstep
