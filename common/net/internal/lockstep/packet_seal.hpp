// Sealed play (docs/PROTOCOL.md §4.7): once a client has joined with a connect token, every
// message both ways is sealed with ChaCha20-Poly1305 under keys derived for that one connection,
// with a per-direction, per-channel sequence number as nonce. A message that fails to open is
// dropped before any of it is decoded.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "lockstep/connect_token.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

inline constexpr std::size_t kServerNonceBytes = 32;  ///< ConnectChallenge.nonce
inline constexpr std::size_t kSealTagBytes = 16;
inline constexpr std::size_t kPlaySequenceBytes = 2;  ///< the low bits a sealed play message carries
inline constexpr std::size_t kReplayWindow = 256;     ///< play messages this far behind the newest still open

/// Fills `out` from the system's secure random source (challenge nonces).
void random_bytes(std::span<std::uint8_t> out);

/// One connection's keys, each derived from a token key and the server's challenge nonce.
struct ConnectionKeys {
  SecretKey send{}, receive{};
};
/// `server_side` picks which of the token's two keys this side sends with.
ConnectionKeys derive_connection_keys(const SecretKey& client_to_server, const SecretKey& server_to_client,
                                      std::span<const std::uint8_t> server_nonce, bool server_side);

/// Why a sealed message did not open.
enum class OpenError { None, Short, Forged, Replayed };
const char* to_string(OpenError e);

/// Seals and opens one connection's messages. Control messages (reliable and ordered) carry no
/// sequence number: each side counts them. Play messages carry the sequence number's low 16 bits;
/// the receiver takes the full number nearest its newest and keeps a window of those it opened.
class PacketSeal {
 public:
  explicit PacketSeal(const ConnectionKeys& keys) : keys_(keys) {}
  /// Appends the sealed form of `plain` to a cleared `out`.
  void seal(Channel channel, std::span<const std::uint8_t> plain, std::vector<std::uint8_t>& out);
  /// Opens `sealed` into a cleared `out`; on failure nothing of the state changes.
  OpenError open(Channel channel, std::span<const std::uint8_t> sealed, std::vector<std::uint8_t>& out);
  /// Bytes a sealed message adds on `channel`.
  static constexpr std::size_t overhead(Channel channel) {
    return kSealTagBytes + (channel == Channel::Play ? kPlaySequenceBytes : 0);
  }

 private:
  ConnectionKeys keys_;
  std::uint64_t sent_[kChannelCount] = {};
  std::uint64_t control_received_ = 0;
  std::uint64_t play_newest_ = 0;
  bool play_any_ = false;
  std::array<std::uint64_t, kReplayWindow> play_window_{};  // sequence + 1 at sequence % kReplayWindow; 0 = none
};

/// Sealing with a long-lived shared key (the status key, §11): a random 24-byte nonce, then
/// XChaCha20-Poly1305 of `plain` with associated data `ad`.
std::vector<std::uint8_t> seal_with_key(const SecretKey& key, std::span<const std::uint8_t> plain, std::string_view ad);
bool open_with_key(const SecretKey& key, std::span<const std::uint8_t> sealed, std::string_view ad, std::vector<std::uint8_t>& out);
/// A status request's proof of holding the status key: the Unix time `now`, sealed.
std::vector<std::uint8_t> status_key_proof(const SecretKey& key, std::uint64_t now);
/// Whether `proof` opens with `key` and its time is within kStatusProofSeconds of `now`; its
/// nonce goes to `nonce`, so that a server can refuse a proof it has seen.
inline constexpr std::uint64_t kStatusProofSeconds = 120;
bool check_status_proof(std::span<const std::uint8_t> proof, const SecretKey& key, std::uint64_t now,
                        std::array<std::uint8_t, 24>* nonce);

}  // namespace lockstep
