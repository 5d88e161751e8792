// The datagram check (docs/PROTOCOL.md §1.1): ENet's 32-bit checksum field, which covers the
// whole datagram (ENet's headers and commands included) and is checked before ENet acts on any
// of it. Keyless it is ENet's own CRC-32; once a connection has keys it is a SipHash-2-4 MAC, so
// that a datagram altered on the way is dropped like a lost one and ENet sends it again.
#pragma once

#include <enet/enet.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/packet_seal.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

inline constexpr std::size_t kCheckBytes = 4;

/// Where the check field of an ENet datagram starts: after the peer field and, when its flag
/// says so, the sent time. 0 when the datagram is too short to hold the field.
std::size_t check_field_at(std::span<const std::uint8_t> datagram);

/// The keyless check: the CRC-32 of zlib over the datagram, as ENet's `enet_crc32` gives it (the
/// CRC's bytes big-endian on the wire). The check field must hold its seed.
std::uint32_t keyless_check(std::span<const std::uint8_t> datagram);
/// The same over a datagram in pieces, as ENet hands its checksum hook the datagram it sends
/// (usable as the hook of a host that speaks only the keyless form).
enet_uint32 ENET_CALLBACK keyless_check(const ENetBuffer* buffers, std::size_t count);
/// The keyed check: the first 4 bytes of SipHash-2-4 (libsodium's `crypto_shorthash`) of the
/// datagram under `key`, in wire order. The check field must hold its seed.
std::uint32_t keyed_check(const std::array<std::uint8_t, 16>& key, std::span<const std::uint8_t> datagram);

/// The datagram keys of a sealed connection: BLAKE2b-128 keyed with each direction's connection
/// key, of the message `lockstep datagram`.
DatagramKeys datagram_keys(const ConnectionKeys& keys);

}  // namespace lockstep
