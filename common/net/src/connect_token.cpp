// Connect tokens: the formats of docs/PROTOCOL.md §4.6, sealed with libsodium's
// XChaCha20-Poly1305 under a random nonce.
#include "lockstep/connect_token.hpp"

#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>

#include "lockstep/bytes.hpp"
#include "lockstep/token_file.hpp"
#include "sodium_init.hpp"

namespace lockstep {
namespace {

constexpr std::size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr std::size_t kTagBytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;
static_assert(kNonceBytes == kTokenNonceBytes && kTagBytes == kTokenTagBytes);

void write_addresses(ByteWriter& w, const std::vector<TokenAddress>& servers) {
  for (const TokenAddress& a : servers) {
    w.raw(a.ip.data(), a.ip.size());
    w.u16(a.port);
  }
}

}  // namespace

void ensure_sodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) std::abort();  // no secure random source: nothing here can be safe
  });
}

const char* to_string(TokenError e) {
  switch (e) {
    case TokenError::None: return "none";
    case TokenError::Malformed: return "malformed token";
    case TokenError::WrongVersion: return "token of another format version";
    case TokenError::WrongProtocol: return "token for another game (protocol id)";
    case TokenError::Forged: return "token does not open with this server's key (forged, altered or another backend's)";
    case TokenError::Expired: return "token expired";
    case TokenError::NotYetValid: return "token not valid yet: created ahead of this server's clock";
    case TokenError::WrongServer: return "token does not name this server";
  }
  return "?";
}

SecretKey random_key() {
  ensure_sodium();
  SecretKey k;
  randombytes_buf(k.data(), k.size());
  return k;
}

bool parse_key_hex(std::string_view hex, SecretKey* out) {
  std::vector<std::uint8_t> bytes;
  if (!parse_bytes_hex(hex, &bytes) || bytes.size() != kKeyBytes) return false;
  std::copy(bytes.begin(), bytes.end(), out->begin());
  return true;
}

std::string key_hex(const SecretKey& key) { return bytes_hex(key); }

bool load_key(const std::string& source, SecretKey* out, std::string* error) {
  std::string text;
  if (source.rfind("env:", 0) == 0) {
    const char* v = std::getenv(source.c_str() + 4);
    if (!v) {
      *error = "environment variable " + source.substr(4) + " is not set";
      return false;
    }
    text = v;
  } else {
    struct stat st {};
    if (stat(source.c_str(), &st) != 0) {
      *error = "cannot read key file '" + source + "'";
      return false;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
      *error = "key file '" + source + "' is readable by others (chmod 600 it)";
      return false;
    }
    std::ifstream in(source);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
      *error = "cannot read key file '" + source + "'";
      return false;
    }
    text = ss.str();
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  const std::string_view hex = first == std::string::npos ? std::string_view{} : std::string_view(text).substr(first, last - first + 1);
  if (!parse_key_hex(hex, out)) {
    *error = "key in '" + source + "' is not 64 hexadecimal digits";
    return false;
  }
  return true;
}

std::uint64_t unix_seconds() { return static_cast<std::uint64_t>(std::time(nullptr)); }

bool mint_connect_token(const TokenRequest& q, const SecretKey& token_key, ConnectToken* out, std::string* error) {
  ensure_sodium();
  if (q.servers.empty() || q.servers.size() > kMaxTokenServers) {
    *error = "a token names 1.." + std::to_string(kMaxTokenServers) + " servers";
    return false;
  }
  for (const TokenAddress& a : q.servers)
    if (a.port == 0) {
      *error = "server address " + a.text() + " has no port";
      return false;
    }
  if (q.user_data.size() > kMaxTokenUserData) {
    *error = "user data is at most " + std::to_string(kMaxTokenUserData) + " bytes";
    return false;
  }
  if (q.lifetime_seconds < 1 || q.lifetime_seconds > kMaxTokenLifetimeSeconds) {
    *error = "a token lives 1.." + std::to_string(kMaxTokenLifetimeSeconds) + " seconds";
    return false;
  }
  if (q.slot != kAnySlot && q.slot >= 32) {
    *error = "slot must be 0..31 or any";
    return false;
  }
  ConnectToken t;
  t.protocol_id = q.protocol_id;
  t.create_time = q.now ? q.now : unix_seconds();
  t.expire_time = t.create_time + q.lifetime_seconds;
  t.client_id = q.client_id;
  t.slot = q.slot;
  t.servers = q.servers;
  t.user_data = q.user_data;
  randombytes_buf(t.client_to_server.data(), kKeyBytes);
  randombytes_buf(t.server_to_client.data(), kKeyBytes);

  std::vector<std::uint8_t> plain;
  ByteWriter p(plain);
  p.u64(t.client_id);
  p.u32(t.slot);
  p.u8(static_cast<std::uint8_t>(t.servers.size()));
  write_addresses(p, t.servers);
  p.raw(t.client_to_server.data(), kKeyBytes);
  p.raw(t.server_to_client.data(), kKeyBytes);
  p.u16(static_cast<std::uint16_t>(t.user_data.size()));
  p.raw(t.user_data.data(), t.user_data.size());

  ByteWriter s(t.sealed);
  s.u8(kConnectTokenVersion);
  s.u64(t.protocol_id);
  s.u64(t.create_time);
  s.u64(t.expire_time);
  std::uint8_t nonce[kNonceBytes];
  randombytes_buf(nonce, sizeof nonce);
  s.raw(nonce, sizeof nonce);
  const std::size_t at = t.sealed.size();
  t.sealed.resize(at + plain.size() + kTagBytes);
  unsigned long long n = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(t.sealed.data() + at, &n, plain.data(), plain.size(), t.sealed.data(),
                                             kSealedHeaderBytes, nullptr, nonce, token_key.data());
  sodium_memzero(plain.data(), plain.size());
  *out = std::move(t);
  return true;
}

std::string connect_token_base64(const ConnectToken& t) {
  ensure_sodium();
  const std::vector<std::uint8_t> bytes = write_connect_token(t);
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes.data(), bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

// The check of one part of a token file: the first 8 bytes of its BLAKE2b (a damaged copy is
// told from a good one; authenticity is the sealed part's and the server's to judge).
namespace {
std::array<std::uint8_t, 8> file_check(std::span<const std::uint8_t> part) {
  ensure_sodium();
  std::array<std::uint8_t, crypto_generichash_BYTES_MIN> full{};
  crypto_generichash(full.data(), full.size(), part.data(), part.size(), nullptr, 0);
  std::array<std::uint8_t, 8> out{};
  std::copy_n(full.begin(), out.size(), out.begin());
  return out;
}
}  // namespace

std::vector<std::uint8_t> write_connect_token(const ConnectToken& t) {
  std::vector<std::uint8_t> out;
  ByteWriter w(out);
  w.raw(kTokenFileMagic, sizeof kTokenFileMagic);
  w.u8(kTokenFileVersion);
  w.u8(static_cast<std::uint8_t>(t.servers.size()));
  w.u16(static_cast<std::uint16_t>(t.sealed.size()));
  w.u64(t.protocol_id);
  w.u64(t.create_time);
  w.u64(t.expire_time);
  w.u64(t.client_id);
  w.u32(t.slot);
  write_addresses(w, t.servers);
  w.raw(t.client_to_server.data(), kKeyBytes);
  w.raw(t.server_to_client.data(), kKeyBytes);
  w.raw(t.sealed.data(), t.sealed.size());
  // The checks of the three parts: header and servers, keys, sealed part.
  const std::size_t keys_at = 44 + 6 * t.servers.size(), sealed_at = keys_at + 2 * kKeyBytes;
  const std::span<const std::uint8_t> all(out);
  const auto header = file_check(all.first(keys_at)), keys = file_check(all.subspan(keys_at, 2 * kKeyBytes)),
             sealed = file_check(all.subspan(sealed_at));
  for (const auto* c : {&header, &keys, &sealed}) w.raw(c->data(), c->size());
  return out;
}

bool read_connect_token(std::span<const std::uint8_t> bytes, ConnectToken* out, std::string* error) {
  // Base64 text (as a matchmaker hands tokens over HTTPS) is read as the bytes it encodes.
  std::vector<std::uint8_t> decoded;
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), kTokenFileMagic, 4) != 0 && bytes.size() <= 4 * kMaxTokenFileBytes) {
    ensure_sodium();
    decoded.resize(bytes.size());
    std::size_t n = 0;
    if (sodium_base642bin(decoded.data(), decoded.size(), reinterpret_cast<const char*>(bytes.data()), bytes.size(),
                          " \t\r\n", &n, nullptr, sodium_base64_VARIANT_ORIGINAL) == 0) {
      decoded.resize(n);
      bytes = decoded;
    }
  }
  TokenFileParts parts;
  ConnectToken t;
  if (!parse_connect_token(bytes, &t, &parts, error)) return false;
  if (!parts.checks.empty()) {
    // Each part against its check: a damaged copy ends here, naming the part, not as a silent
    // timeout or a refusal from the server.
    const struct {
      const char* what;
      std::span<const std::uint8_t> part;
    } named[3] = {{"its header or server list", parts.header},
                  {"its keys (the client's copy of the connection keys)", parts.keys},
                  {"its sealed part (the server's copy)", parts.sealed}};
    for (std::size_t i = 0; i < 3; ++i) {
      std::array<std::uint8_t, 8> stored{};
      std::copy_n(parts.checks.begin() + static_cast<std::ptrdiff_t>(8 * i), 8, stored.begin());
      if (stored != file_check(named[i].part)) {
        *error = std::string("connect token damaged: ") + named[i].what + " does not match its check; ask for a new token";
        return false;
      }
    }
  }
  *out = std::move(t);
  return true;
}
TokenError open_connect_token(std::span<const std::uint8_t> sealed, const SecretKey& token_key, std::uint64_t protocol_id,
                              std::uint64_t now, OpenedToken* out) {
  ensure_sodium();
  if (sealed.size() < kSealedHeaderBytes + kNonceBytes + kTagBytes || sealed.size() > kMaxSealedTokenBytes)
    return TokenError::Malformed;
  ByteReader h(sealed);
  const std::uint8_t version = h.u8();
  OpenedToken t;
  t.protocol_id = h.u64();
  t.create_time = h.u64();
  t.expire_time = h.u64();
  h.raw(t.nonce.data(), t.nonce.size());
  if (version != kConnectTokenVersion) return TokenError::WrongVersion;
  if (t.protocol_id != protocol_id) return TokenError::WrongProtocol;
  const std::span<const std::uint8_t> cipher = sealed.subspan(kSealedHeaderBytes + kNonceBytes);
  std::vector<std::uint8_t> plain(cipher.size() - kTagBytes);
  unsigned long long n = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain.data(), &n, nullptr, cipher.data(), cipher.size(), sealed.data(),
                                                 kSealedHeaderBytes, t.nonce.data(), token_key.data()) != 0)
    return TokenError::Forged;
  // Authentic: the backend wrote it, so a field out of range is a backend's bug, still refused.
  ByteReader p(plain);
  t.client_id = p.u64();
  t.slot = p.u32();
  const std::uint8_t servers = p.u8();
  if (!read_token_addresses(p, servers, &t.servers)) return TokenError::Malformed;
  p.raw(t.client_to_server.data(), kKeyBytes);
  p.raw(t.server_to_client.data(), kKeyBytes);
  const std::uint16_t user = p.u16();
  if (!p.ok() || user > kMaxTokenUserData || p.remaining() != user) return TokenError::Malformed;
  t.user_data.resize(user);
  p.raw(t.user_data.data(), user);
  sodium_memzero(plain.data(), plain.size());
  if (t.slot != kAnySlot && t.slot >= 32) return TokenError::Malformed;
  if (t.expire_time < t.create_time || t.expire_time - t.create_time > kMaxTokenLifetimeSeconds) return TokenError::Malformed;
  *out = std::move(t);
  if (out->create_time > now + kMaxClockSkewSeconds) return TokenError::NotYetValid;
  return now >= out->expire_time ? TokenError::Expired : TokenError::None;
}

}  // namespace lockstep
