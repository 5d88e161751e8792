// A connect token file's layout, read without its checks (token_file.hpp).
#include "lockstep/token_file.hpp"

#include <cstring>

#include "lockstep/bytes.hpp"

namespace lockstep {
bool read_token_addresses(ByteReader& r, std::size_t n, std::vector<TokenAddress>* out) {
  if (n < 1 || n > kMaxTokenServers) return false;
  out->resize(n);
  for (TokenAddress& a : *out) {
    r.raw(a.ip.data(), a.ip.size());
    a.port = r.u16();
    if (a.port == 0) return false;
  }
  return r.ok();
}

bool parse_connect_token(std::span<const std::uint8_t> bytes, ConnectToken* out, TokenFileParts* parts, std::string* error) {
  ByteReader r(bytes);
  std::uint8_t magic[4];
  r.raw(magic, sizeof magic);
  const std::uint8_t version = r.u8();
  const std::uint8_t servers = r.u8();
  const std::uint16_t sealed = r.u16();
  if (!r.ok() || std::memcmp(magic, kTokenFileMagic, 4) != 0) {
    *error = "not a connect token (no LSCT header)";
    return false;
  }
  if (version != 1 && version != kTokenFileVersion) {
    *error = "connect token of format version " + std::to_string(version) + " (this build reads 1 and " +
             std::to_string(kTokenFileVersion) + ")";
    return false;
  }
  const std::size_t checks = version >= 2 ? 3 * 8 : 0;
  ConnectToken& t = *out;
  t = ConnectToken{};
  t.protocol_id = r.u64();
  t.create_time = r.u64();
  t.expire_time = r.u64();
  t.client_id = r.u64();
  t.slot = r.u32();
  if (!read_token_addresses(r, servers, &t.servers)) {
    *error = "connect token: bad server list";
    return false;
  }
  r.raw(t.client_to_server.data(), kKeyBytes);
  r.raw(t.server_to_client.data(), kKeyBytes);
  if (sealed < kSealedHeaderBytes + kTokenNonceBytes + kTokenTagBytes || sealed > kMaxSealedTokenBytes ||
      r.remaining() != sealed + checks) {
    *error = "connect token: truncated or of the wrong length";
    return false;
  }
  t.sealed.resize(sealed);
  r.raw(t.sealed.data(), sealed);
  if (!r.ok()) {
    *error = "connect token: truncated";
    return false;
  }
  const std::size_t keys_at = 44 + 6 * std::size_t{servers}, sealed_at = keys_at + 2 * kKeyBytes;
  parts->header = bytes.first(keys_at);
  parts->keys = bytes.subspan(keys_at, 2 * kKeyBytes);
  parts->sealed = bytes.subspan(sealed_at, sealed);
  parts->checks = bytes.subspan(sealed_at + sealed, checks);
  return true;
}

}  // namespace lockstep
