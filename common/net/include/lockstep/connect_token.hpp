// Connect tokens (docs/PROTOCOL.md §4.6): what a matchmaker gives a player so that it can join
// one match's server, and nobody else can. A backend and its servers share a 32-byte token key;
// the backend mints a token per player with fresh per-connection keys; the player's copy has the
// keys and the server addresses in the clear and, sealed with the token key (XChaCha20-Poly1305),
// the part only a server can open: client id, seat, addresses, the same keys and user data.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/export.h"

namespace lockstep {

inline constexpr std::uint8_t kConnectTokenVersion = 1;
/// A game's protocol id separates its tokens from every other game's ("LOCKSTEP" by default).
inline constexpr std::uint64_t kDefaultProtocolId = 0x4c4f434b53544550ull;
inline constexpr std::size_t kKeyBytes = 32;
inline constexpr std::size_t kMaxTokenServers = 8;
inline constexpr std::size_t kMaxTokenUserData = 256;
inline constexpr std::uint32_t kAnySlot = 0xffffffffu;
/// The sealed part with every field at its largest (PROTOCOL.md §4.6).
inline constexpr std::size_t kMaxSealedTokenBytes = 25 + 24 + (8 + 4 + 1 + 6 * kMaxTokenServers + 2 * kKeyBytes + 2 + kMaxTokenUserData) + 16;
/// The token file's format: 2 ends with a check of each part (format 1, without, is still read).
inline constexpr std::uint8_t kTokenFileVersion = 2;
/// A player's token file at its largest: header and servers, keys, sealed part, three 8-byte checks.
inline constexpr std::size_t kMaxTokenFileBytes = 44 + 6 * kMaxTokenServers + 2 * kKeyBytes + kMaxSealedTokenBytes + 3 * 8;
/// A token's lifetime may be at most this (a day): tokens are for joining now.
inline constexpr std::uint64_t kMaxTokenLifetimeSeconds = 86'400;
/// How far ahead of the server's clock a token's creation time may be (the backend's clock and
/// the server's differ a little): beyond it the token is not valid yet, so the lifetime cap also
/// bounds how long a token stays good.
inline constexpr std::uint64_t kMaxClockSkewSeconds = 60;

using SecretKey = std::array<std::uint8_t, kKeyBytes>;

/// An IPv4 address and port (ENet's transport is IPv4).
struct LOCKSTEP_API TokenAddress {
  std::array<std::uint8_t, 4> ip{};
  std::uint16_t port = 0;
  [[nodiscard]] std::string text() const;  ///< "a.b.c.d:port"
  friend bool operator==(const TokenAddress&, const TokenAddress&) = default;
};
/// Parses "a.b.c.d:port" (a numeric IPv4 address; port 1..65535).
LOCKSTEP_API bool parse_token_address(std::string_view text, TokenAddress* out);

/// What a token says. On the player's side every field is known; `sealed` is the part it passes
/// to the server unopened.
struct LOCKSTEP_API ConnectToken {
  std::uint64_t protocol_id = kDefaultProtocolId;
  std::uint64_t create_time = 0;  ///< seconds since the Unix epoch
  std::uint64_t expire_time = 0;  ///< the server refuses the token from this second on
  std::uint64_t client_id = 0;    ///< the matchmaker's id of the player; a seat is bound to it
  std::uint32_t slot = kAnySlot;  ///< the player slot it may take, or kAnySlot
  std::vector<TokenAddress> servers;  ///< 1..8 servers it is good for (lockstep's client joins the first)
  SecretKey client_to_server{};         ///< per-connection keys (PROTOCOL.md §4.7 derives each connection's)
  SecretKey server_to_client{};
  std::vector<std::uint8_t> user_data;  ///< 0..256 bytes for the game, only the server reads them
  std::vector<std::uint8_t> sealed;     ///< what the player sends in its ConnectRequest
};

/// Why a token was refused (each has a RefuseReason on the wire).
enum class TokenError {
  None,
  Malformed,     ///< truncated, too long, or a field out of range
  WrongVersion,  ///< another token format version
  WrongProtocol, ///< minted for another game (protocol id)
  Forged,        ///< does not open with this server's key: forged, altered, or another backend's
  Expired,       ///< past its expiry time
  NotYetValid,   ///< created more than kMaxClockSkewSeconds ahead of the server's clock
  WrongServer,   ///< does not name this server
};
LOCKSTEP_API const char* to_string(TokenError e);

/// A key from the system's secure random source.
LOCKSTEP_API SecretKey random_key();
/// 64 hexadecimal digits; false for anything else.
LOCKSTEP_API bool parse_key_hex(std::string_view hex, SecretKey* out);
LOCKSTEP_API std::string key_hex(const SecretKey& key);
/// Reads a key from `source`: a file holding 64 hex digits (surrounding white space allowed; a
/// file readable by others than its owner is refused), or "env:NAME" for an environment variable.
/// Keys never come from a command line, where every user of the machine can read them.
LOCKSTEP_API bool load_key(const std::string& source, SecretKey* out, std::string* error);

/// What a matchmaker asks for.
struct LOCKSTEP_API TokenRequest {
  std::uint64_t protocol_id = kDefaultProtocolId;
  std::uint64_t client_id = 0;
  std::uint32_t slot = kAnySlot;
  std::vector<TokenAddress> servers;
  std::vector<std::uint8_t> user_data;
  std::uint64_t lifetime_seconds = 30;
  std::uint64_t now = 0;  ///< create time; 0 = the wall clock
};
/// Mints a token with fresh random connection keys, sealed with `token_key`; false with `error`
/// when the request is out of range.
LOCKSTEP_API bool mint_connect_token(const TokenRequest& request, const SecretKey& token_key, ConnectToken* out, std::string* error);

/// The player's token file (PROTOCOL.md §4.6) and back. read_connect_token checks the form and,
/// in format 2, each part against its check (a damaged file is refused naming the part); the
/// player cannot open the sealed part.
LOCKSTEP_API std::vector<std::uint8_t> write_connect_token(const ConnectToken& token);
/// The token file's bytes as base64 text; read_connect_token reads either form.
LOCKSTEP_API std::string connect_token_base64(const ConnectToken& token);
LOCKSTEP_API bool read_connect_token(std::span<const std::uint8_t> bytes, ConnectToken* out, std::string* error);

/// A server's view of a sealed token it opened.
struct LOCKSTEP_API OpenedToken {
  std::uint64_t protocol_id = 0, create_time = 0, expire_time = 0, client_id = 0;
  std::uint32_t slot = kAnySlot;
  std::vector<TokenAddress> servers;
  SecretKey client_to_server{}, server_to_client{};
  std::vector<std::uint8_t> user_data;
  /// The sealed part's nonce: the token's identity, for telling a second use from the first.
  std::array<std::uint8_t, 24> nonce{};
};
/// Opens a sealed token: form, version, protocol id, then authentication, then expiry (`now`,
/// seconds since the Unix epoch). On Expired `out` is filled: a server may still let a client
/// that holds a seat come back with it. Whether the token names this server is the caller's check.
LOCKSTEP_API TokenError open_connect_token(std::span<const std::uint8_t> sealed, const SecretKey& token_key, std::uint64_t protocol_id,
                              std::uint64_t now, OpenedToken* out);

/// Seconds since the Unix epoch, for token times.
LOCKSTEP_API std::uint64_t unix_seconds();

}  // namespace lockstep
