// Admission's record of each connection, and the door every message passes both ways: a
// message in is opened (on a sealed connection) before anything of it is read and counted against
// the connection's rate; one out is sealed, and before the peer proves it holds its token's keys
// it is never sent more than it sent. Also the ledger of connect tokens used and the status proofs
// taken. One part of ServerSession (server_admission.cpp fills the records): peers by their index
// (peer_records.hpp), times passed in, nothing of sockets.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "lockstep/admission.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/packet_seal.hpp"
#include "peer_records.hpp"

namespace lockstep {

class PeerGate {
 public:
  /// What admission knows of a connection: its address, its connect token and sealing, and the
  /// limits it is held to.
  struct Entry {
    std::uint32_t ip = 0;        // its IPv4 address (network order; 0 in-process)
    std::int64_t last_received = 0;  // 0: nothing yet
    double allowance = 0;        // messages it may still send now (a bucket refilled at the rate limit)
    std::int64_t allowance_at = 0;  // when the allowance was last refilled
    std::uint32_t bad = 0;       // dropped messages so far
    std::uint32_t unopened = 0;  // sealed messages from it (or in its name) that did not open
    std::unique_ptr<PacketSeal> seal;  // set by a good ConnectRequest: every later message is sealed
    bool by_token = false;  // a good ConnectRequest came: sealed, or through the WebSocket door's TLS (§17)
    bool authenticated = false;  // a sealed message from it has opened: it holds the token's keys
    std::uint64_t client_id = 0;
    std::vector<std::uint8_t> user_data;  // the token's, for the game's server side
    std::uint32_t token_slot = kAnySlot;
    // The token's nonce and expiry, claimed in the ledger for this address only once the peer has
    // proved it holds the token's keys: a ConnectRequest replayed by an observer claims nothing.
    std::array<std::uint8_t, 24> token_nonce{};
    std::uint64_t token_expire = 0;
    std::uint64_t bytes_in = 0, bytes_out = 0;  // before authentication: replies never outgrow requests
    std::vector<std::uint8_t> deferred_token;  // a ConnectRequest's token waiting for the server's key
  };

  /// The record of the peer at index `peer` (peer_records.hpp: made on first use, fresh for an index not in use).
  Entry& entry(std::uint32_t peer) { return entries_[peer]; }
  [[nodiscard]] const Entry& entry(std::uint32_t peer) const { return entries_.get(peer); }
  /// A new connection from `ip` at index `peer`, with a full bucket of `burst` messages. (Every
  /// `peer` argument here is a peer's index.)
  void open(std::uint32_t peer, std::uint32_t ip, double burst, std::int64_t now) {
    Entry& e = entries_[peer];
    e.ip = ip;
    e.allowance = burst;
    e.allowance_at = now;
  }
  void forget(std::uint32_t peer) { entries_.forget(peer); }

  /// A message of `size` bytes arrived from the peer (counted toward its reply budget while it is
  /// not authenticated).
  void arrived(std::uint32_t peer, std::size_t size) {
    Entry& e = entries_[peer];
    if (!e.authenticated) e.bytes_in += size;
  }
  /// Takes one message from the peer's rate bucket (`burst` messages at once, `rate` a second);
  /// false when it is over its rate, unless `excused()` (asked only then) says the message does
  /// not count: an answer the server asked for. Notes the time of the peer's last message.
  template <class Excused>
  [[nodiscard]] bool admit_message(std::uint32_t peer, std::int64_t now, double burst, double rate, Excused&& excused) {
    Entry& e = entries_[peer];
    // A bucket: a sustained rate and a burst; a peer above it is flooding.
    e.allowance = std::min(burst, e.allowance + static_cast<double>(now - e.allowance_at) * 1e-9 * rate);
    e.allowance_at = now;
    if ((e.allowance -= 1.0) < 0.0 && !excused()) return false;
    e.last_received = now;
    return true;
  }
  /// Gives one message back to the bucket (a chunk of a state the server asked for).
  void refund(std::uint32_t peer, double burst) {
    Entry& e = entries_[peer];
    e.allowance = std::min(burst, e.allowance + 1.0);
  }
  /// Counts a dropped message of the peer's; how many so far.
  std::uint32_t count_bad(std::uint32_t peer) { return ++entries_[peer].bad; }

  /// The bytes to send the peer on `channel`: sealed on a sealed connection (valid until the next
  /// call), as they are otherwise. Empty when they would exceed what an unauthenticated peer sent
  /// (`budgeted`: the server takes players by token, and the peer is a remote one).
  [[nodiscard]] std::span<const std::uint8_t> outgoing(std::uint32_t peer, Channel channel, std::span<const std::uint8_t> bytes,
                                                       bool budgeted, bool* withheld);

  /// Opens a message from a sealed connection into a buffer of the gate's (valid until the next
  /// call); the error when it does not open.
  [[nodiscard]] OpenError open_message(std::uint32_t peer, Channel channel, std::span<const std::uint8_t> data) {
    return entries_[peer].seal->open(channel, data, opened_);
  }
  [[nodiscard]] std::span<const std::uint8_t> opened() const { return opened_; }

  TokenLedger tokens;  // the address each connect token was first used from
  /// Status-key proofs taken, with when (Unix s), kept while they could be replayed; refused when seen again.
  std::map<std::array<std::uint8_t, 24>, std::uint64_t> status_proofs;
  static constexpr std::size_t kMaxStatusProofs = 4096;

 private:
  PeerRecords<Entry> entries_;
  // One message opened, and one sealed, each reused. Two buffers: handling an opened message
  // (read in place) sends replies, which are sealed while it is still being read.
  std::vector<std::uint8_t> opened_, sealed_;
};

}  // namespace lockstep
