// Sealed play: each connection's keys and ChaCha20-Poly1305 messages with a replay window
// (packet_seal.hpp).
#include "lockstep/packet_seal.hpp"

#include <sodium.h>

#include <cstring>

#include "sodium_init.hpp"

namespace lockstep {
namespace {

using Nonce = std::array<std::uint8_t, crypto_aead_chacha20poly1305_ietf_NPUBBYTES>;
static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == kSealTagBytes);

// channel, three zero bytes, the sequence number (little-endian)
Nonce nonce_for(Channel channel, std::uint64_t sequence) {
  Nonce n{};
  n[0] = static_cast<std::uint8_t>(channel);
  std::memcpy(n.data() + 4, &sequence, sizeof sequence);
  return n;
}

SecretKey derive(const SecretKey& token_key, const char* label, std::span<const std::uint8_t> server_nonce) {
  SecretKey out;
  crypto_generichash_state st;
  crypto_generichash_init(&st, token_key.data(), token_key.size(), out.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(label), std::strlen(label));
  crypto_generichash_update(&st, server_nonce.data(), server_nonce.size());
  crypto_generichash_final(&st, out.data(), out.size());
  return out;
}

}  // namespace

const char* to_string(OpenError e) {
  switch (e) {
    case OpenError::None: return "none";
    case OpenError::Short: return "too short to be sealed";
    case OpenError::Forged: return "failed authentication";
    case OpenError::Replayed: return "replayed";
  }
  return "?";
}

void random_bytes(std::span<std::uint8_t> out) {
  ensure_sodium();
  randombytes_buf(out.data(), out.size());
}

ConnectionKeys derive_connection_keys(const SecretKey& client_to_server, const SecretKey& server_to_client,
                                      std::span<const std::uint8_t> server_nonce, bool server_side) {
  ensure_sodium();
  const SecretKey c2s = derive(client_to_server, "lockstep c2s", server_nonce);
  const SecretKey s2c = derive(server_to_client, "lockstep s2c", server_nonce);
  return server_side ? ConnectionKeys{s2c, c2s} : ConnectionKeys{c2s, s2c};
}

void PacketSeal::seal(Channel channel, std::span<const std::uint8_t> plain, std::vector<std::uint8_t>& out) {
  const std::uint64_t seq = sent_[static_cast<std::size_t>(channel)]++;
  const std::size_t head = channel == Channel::Play ? kPlaySequenceBytes : 0;
  out.resize(head + plain.size() + kSealTagBytes);
  if (head) {
    out[0] = static_cast<std::uint8_t>(seq);
    out[1] = static_cast<std::uint8_t>(seq >> 8);
  }
  const Nonce n = nonce_for(channel, seq);
  unsigned long long len = 0;
  crypto_aead_chacha20poly1305_ietf_encrypt(out.data() + head, &len, plain.data(), plain.size(), nullptr, 0, nullptr,
                                            n.data(), keys_.send.data());
}

OpenError PacketSeal::open(Channel channel, std::span<const std::uint8_t> sealed, std::vector<std::uint8_t>& out) {
  const std::size_t head = channel == Channel::Play ? kPlaySequenceBytes : 0;
  if (sealed.size() < head + kSealTagBytes) return OpenError::Short;
  std::uint64_t seq = control_received_;
  if (channel == Channel::Play) {
    // The full number nearest the newest opened: the one with these low 16 bits within 2^15 of it.
    const std::uint64_t low = sealed[0] | (std::uint64_t{sealed[1]} << 8);
    seq = (play_newest_ & ~std::uint64_t{0xffff}) | low;
    if (seq > play_newest_ + 0x8000 && seq >= 0x10000) seq -= 0x10000;
    else if (seq + 0x8000 < play_newest_) seq += 0x10000;
    if (play_any_ && (seq + kReplayWindow <= play_newest_ || play_window_[seq % kReplayWindow] == seq + 1))
      return OpenError::Replayed;
  }
  out.resize(sealed.size() - head - kSealTagBytes);
  const Nonce n = nonce_for(channel, seq);
  unsigned long long len = 0;
  if (crypto_aead_chacha20poly1305_ietf_decrypt(out.data(), &len, nullptr, sealed.data() + head, sealed.size() - head,
                                                nullptr, 0, n.data(), keys_.receive.data()) != 0) {
    out.clear();
    return OpenError::Forged;
  }
  if (channel == Channel::Control) {
    ++control_received_;
  } else {
    play_window_[seq % kReplayWindow] = seq + 1;
    if (!play_any_ || seq > play_newest_) play_newest_ = seq;
    play_any_ = true;
  }
  return OpenError::None;
}

std::vector<std::uint8_t> seal_with_key(const SecretKey& key, std::span<const std::uint8_t> plain, std::string_view ad) {
  ensure_sodium();
  constexpr std::size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  std::vector<std::uint8_t> out(kNonce + plain.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES);
  randombytes_buf(out.data(), kNonce);
  unsigned long long len = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(out.data() + kNonce, &len, plain.data(), plain.size(),
                                             reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr,
                                             out.data(), key.data());
  return out;
}

bool open_with_key(const SecretKey& key, std::span<const std::uint8_t> sealed, std::string_view ad, std::vector<std::uint8_t>& out) {
  ensure_sodium();
  constexpr std::size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  constexpr std::size_t kTag = crypto_aead_xchacha20poly1305_ietf_ABYTES;
  out.clear();
  if (sealed.size() < kNonce + kTag) return false;
  out.resize(sealed.size() - kNonce - kTag);
  unsigned long long len = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(out.data(), &len, nullptr, sealed.data() + kNonce, sealed.size() - kNonce,
                                                 reinterpret_cast<const unsigned char*>(ad.data()), ad.size(),
                                                 sealed.data(), key.data()) != 0) {
    out.clear();
    return false;
  }
  return true;
}

namespace {
constexpr std::string_view kStatusAd = "lockstep status";
}  // namespace

std::vector<std::uint8_t> status_key_proof(const SecretKey& key, std::uint64_t now) {
  std::uint8_t t[8];
  std::memcpy(t, &now, sizeof t);
  return seal_with_key(key, t, kStatusAd);
}

bool check_status_proof(std::span<const std::uint8_t> proof, const SecretKey& key, std::uint64_t now,
                        std::array<std::uint8_t, 24>* nonce) {
  std::vector<std::uint8_t> t;
  if (!open_with_key(key, proof, kStatusAd, t) || t.size() != 8) return false;
  std::uint64_t when = 0;
  std::memcpy(&when, t.data(), sizeof when);
  if (when + kStatusProofSeconds < now || when > now + kStatusProofSeconds) return false;
  std::memcpy(nonce->data(), proof.data(), nonce->size());
  return true;
}

}  // namespace lockstep
