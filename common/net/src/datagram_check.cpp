// The datagram check's two forms, keyless and keyed, over whole ENet datagrams
// (datagram_check.hpp).
#include "lockstep/datagram_check.hpp"

#include <enet/enet.h>
#include <arpa/inet.h>
#include <sodium.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "sodium_init.hpp"

namespace lockstep {

static_assert(crypto_shorthash_KEYBYTES == 16 && crypto_shorthash_BYTES == 8);

std::size_t check_field_at(std::span<const std::uint8_t> datagram) {
  if (datagram.size() < 2) return 0;
  const std::size_t at = (datagram[0] & (ENET_PROTOCOL_HEADER_FLAG_SENT_TIME >> 8)) != 0 ? 4 : 2;
  return datagram.size() >= at + kCheckBytes ? at : 0;
}

namespace {
// ENet's enet_crc32 is zlib's CRC-32 computed a byte at a time (about 2 ns a byte here); zlib's
// own is several times faster. Either gives the same 4 bytes.
uLong crc_more(uLong crc, const void* data, std::size_t size) {
  for (std::size_t at = 0; at < size;) {
    const auto n = static_cast<uInt>(std::min<std::size_t>(size - at, 1u << 30));
    crc = crc32(crc, static_cast<const Bytef*>(data) + at, n);
    at += n;
  }
  return crc;
}
}  // namespace

std::uint32_t keyless_check(std::span<const std::uint8_t> datagram) {
  return htonl(static_cast<std::uint32_t>(crc_more(crc32(0L, Z_NULL, 0), datagram.data(), datagram.size())));
}

enet_uint32 ENET_CALLBACK keyless_check(const ENetBuffer* buffers, std::size_t count) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t b = 0; b < count; ++b) crc = crc_more(crc, buffers[b].data, buffers[b].dataLength);
  return htonl(static_cast<std::uint32_t>(crc));
}

std::uint32_t keyed_check(const std::array<std::uint8_t, 16>& key, std::span<const std::uint8_t> datagram) {
  unsigned char mac[crypto_shorthash_BYTES];
  crypto_shorthash(mac, datagram.data(), datagram.size(), key.data());
  std::uint32_t out;
  std::memcpy(&out, mac, sizeof out);
  return out;
}

namespace {
std::array<std::uint8_t, 16> derive(const SecretKey& key) {
  static constexpr char kLabel[] = "lockstep datagram";
  std::array<std::uint8_t, 16> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(kLabel), sizeof kLabel - 1,
                     key.data(), key.size());
  return out;
}
}  // namespace

DatagramKeys datagram_keys(const ConnectionKeys& keys) {
  ensure_sodium();
  return {derive(keys.send), derive(keys.receive)};
}

}  // namespace lockstep
