// The wire protocol (schemas/messages.fbs): verified decoding and message builders.
// Nothing here touches a socket; sessions hand the bytes to the transport.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/connect_token.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/input.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/wire/messages_generated.h"

namespace lockstep::protocol {

inline constexpr std::size_t kMaxMessageBytes = 8 * 1024;  ///< larger datagrams are dropped unread (but play
                                                            ///< messages, up to kMaxDetailMessageBytes)
/// Command bytes one play message carries beyond its first item: more wait for the next message.
inline constexpr std::size_t kPlayCommandBudget = 8 * 1024;
inline constexpr std::size_t kMaxWindow = 32;    ///< inputs, hashes or frames in one play message
inline constexpr std::size_t kMaxNameBytes = 32;
inline constexpr std::size_t kMaxJoinSecretBytes = 128;
inline constexpr std::size_t kMaxDetailBytes = 256;
inline constexpr std::uint32_t kMaxInputDelay = 50;  ///< ticks
inline constexpr std::uint32_t kMaxSendEvery = 5;    ///< play messages every 1..5 ticks
inline constexpr std::size_t kMaxDetailMessageBytes = 32 * 1024;  ///< a DesyncDetail may be this large
inline constexpr std::size_t kMaxSnapshotBytes = 20 * 1024 * 1024;  ///< a whole snapshot, all chunks
inline constexpr std::size_t kSnapshotChunkBytes = 16 * 1024;        ///< state bytes per Snapshot message
inline constexpr std::size_t kMaxSecretBytes = 64;
inline constexpr std::size_t kMaxProbeHashes = 2048;
inline constexpr std::size_t kMaxProbeValues = 64;
inline constexpr std::size_t kChallengeNonceBytes = 32;
inline constexpr std::size_t kMaxStatusPadding = 1024;
inline constexpr std::size_t kMaxStatusProofBytes = 64;
inline constexpr std::size_t kStatusRequestBytes = 256;  ///< what askers pad a status request to

/// Why a datagram was dropped before any field was used.
enum class DecodeError { None, TooLarge, NotFlatBuffer, NoBody, FieldOutOfRange, UnknownBase };
const char* to_string(DecodeError e);

/// Verifies `bytes` as a Message (identifier, structure, then every field's range) and returns
/// it; nullptr with `error` set otherwise. The result points into `bytes`.
/// `max_bytes` caps the datagram; messages other than DesyncDetail and Snapshot must also fit
/// kMaxMessageBytes.
const wire::Message* decode(std::span<const std::uint8_t> bytes, DecodeError* error,
                            std::size_t max_bytes = kMaxMessageBytes);

using Bytes = std::vector<std::uint8_t>;

/// The libraries a JoinRequest names, and their bounds.
using lockstep::kMaxLibraries, lockstep::kMaxLibraryNameBytes, lockstep::kMaxLibraryBuildBytes;  // simulation.hpp
Bytes join_request(std::uint32_t protocol_version, std::uint64_t fingerprint, const std::string& token,
                   const std::string& name, bool spectate, const std::string& rejoin_secret = "",
                   std::span<const LibraryBuild> libraries = {}, const std::string& code = "",
                   std::uint32_t fma = 0);
/// A JoinRequest's libraries (already bounded by decode).
std::vector<LibraryBuild> join_libraries(const wire::JoinRequest& m);
struct Seat {
  std::uint32_t slot;
  std::string name;
};
Bytes welcome(std::int32_t slot, std::uint32_t input_delay, Tick last_tick, const WorldParams& world,
              const std::vector<Seat>& roster, const std::string& rejoin_secret = "", bool joining = false,
              std::uint64_t world_fingerprint = 0, std::uint32_t send_every = 1);
Bytes refuse(wire::RefuseReason reason, const std::string& detail);
/// Tick 0's deadline is `starts_in_us` after this is sent.
Bytes start(std::uint32_t starts_in_us);
Bytes desync_probe(Tick tick, wire::ProbeLevel level, std::uint32_t first, std::uint32_t count, std::uint32_t block_size);
Bytes desync_detail(Tick tick, wire::ProbeLevel level, std::uint32_t first, bool available,
                    std::span<const std::uint64_t> hashes, std::span<const std::uint64_t> values);
/// The whole state as Snapshot messages of at most kSnapshotChunkBytes each, in order.
/// `request` non-zero: a peer's answer to the server's StateRequest (an empty `state`: not held).
/// `compare`: relay mode's majority state, sent to a desynced peer to compare with its own.
std::vector<Bytes> snapshot(Tick tick, std::uint32_t epoch, std::uint64_t hash, std::span<const std::uint8_t> state,
                            bool join, std::uint32_t request = 0, bool compare = false);
/// One Snapshot message: `data` at `offset` of a state of `total` bytes.
Bytes snapshot_chunk(Tick tick, std::uint32_t epoch, std::uint64_t hash, std::uint32_t total, std::uint32_t offset,
                     std::span<const std::uint8_t> data, bool join, std::uint32_t request = 0, bool compare = false);
/// A desynced peer's own localization (relay mode): `r`'s tick, where, entity, and its
/// server_fields (the reference's values) beside client_fields (its own).
Bytes desync_located(const DesyncReport& r, bool available, std::int64_t first_byte);
/// Client -> server: the game's result at `tick` (at most kMaxResultBytes).
Bytes game_result(Tick tick, std::span<const std::uint8_t> result);
/// Server -> player, a server without the simulation: your saved state of `tick`, please.
Bytes state_request(Tick tick, std::uint32_t request);
Bytes desync_notice(Tick tick, std::int32_t slot, std::uint64_t server_hash, std::uint64_t client_hash);
Bytes player_joined(std::uint32_t slot, const std::string& name);
Bytes player_left(std::uint32_t slot, Tick tick, const std::string& reason);
Bytes leave(const std::string& reason);
Bytes session_end(wire::EndReason reason, Tick last_tick, const std::string& detail);
Bytes kick(const std::string& reason);
/// For a join that failed verification only on a field's length: that field's name ("name",
/// "token", "rejoin_secret") and its limit; "" when `data` is not such a join.
std::string overlong_join_field(std::span<const std::uint8_t> data, std::size_t* limit);

/// Padded to about `pad_to` bytes; `key_proof` from status_key_proof() (packet_seal.hpp) or empty.
Bytes status_request(std::span<const std::uint8_t> key_proof = {}, std::size_t pad_to = kStatusRequestBytes);
using lockstep::SeatStatus;  // one player's network figures (net_types.hpp)
struct Status {
  std::string phase;
  Tick tick = 0;
  std::uint32_t players = 0, joined = 0, active = 0, spectators = 0, desyncs = 0, lateness_p99_us = 0;
  std::vector<SeatStatus> seats;
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  Tick last_tick = 0;
  bool full = true;  ///< names and figures included (false: a public reply, §11)
  /// Datagrams dropped unread, by kind (DatagramDrops in messages.fbs); full replies only.
  struct Drops {
    std::uint64_t refused = 0, empty = 0, oversized = 0, unknown_connection = 0, socket_buffer_full = 0,
                  websocket_refused = 0;
    std::uint64_t messages_dropped = 0, kicked = 0, pending_refused = 0, pending_evicted = 0, handshakes_cut = 0,
                  replies_withheld = 0, states_unanswered = 0, states_forged = 0;
  } dropped;
};
Bytes status_reply(const Status& s);
/// What anyone may know (phase, seats, version, fingerprint); `sealed`: the full reply for a key holder.
Bytes public_status_reply(const Status& s, std::span<const std::uint8_t> sealed = {});
/// The first message to a server that admits connect tokens (§4.6), and its answer.
Bytes connect_request(std::span<const std::uint8_t> sealed_token);
Bytes connect_challenge(std::span<const std::uint8_t> nonce);

// ---- the play messages (docs/PROTOCOL.md §6.6) ----
// Not Messages: each is a FlatBuffers buffer of its own root table (ClientPlay, ServerPlay) without
// file identifier, carrying the compact encoding in one byte vector.

/// Whether `bytes` claim to be a Message (file identifier "LSK1"); on the play channel, a datagram
/// that does not is the play message of its direction.
bool is_message(std::span<const std::uint8_t> bytes);

/// A client's play message: frame ack, this player's newest unacknowledged inputs and commands,
/// the newest unacknowledged state hashes, the epoch and (now and then) the client's lead.
struct ClientPlay {
  Tick frame_ack = 0;                ///< every confirmed frame up to this tick has been received
  Tick input_first_tick = 0;         ///< tick of the first input (when input_count > 0)
  std::uint32_t input_count = 0;     ///< consecutive ticks of this player's inputs, 0..kMaxWindow
  PackedInputs inputs;               ///< input_count items of the session's input size
  Tick hash_first_tick = 0;          ///< tick of hashes[0]
  std::vector<std::uint64_t> hashes; ///< state hashes after consecutive executed ticks, 0..kMaxWindow
  std::uint32_t epoch = 0;           ///< resyncs applied so far
  bool has_lead = false;             ///< whether lead_us is carried (not every message: it changes slowly)
  std::int32_t lead_us = 0;
};
/// `m.inputs` is pack_ticks() of input_count consecutive player ticks, each of one input size.
Bytes client_play(const ClientPlay& m);
/// Decodes a ClientPlay for a session of `input_size`-byte inputs into `out` (its memory reused).
/// The items are within the limits of input.hpp, but not yet checked against the session's window.
DecodeError decode_client_play(std::span<const std::uint8_t> bytes, std::uint32_t input_size, ClientPlay& out);

/// What a ServerPlay says besides its frames.
struct ServerPlayHeader {
  Tick input_ack = 0;  ///< every input of this client up to this tick has been received
  Tick hash_ack = 0;   ///< every hash of this client up to this tick has been received
  bool has_slack = false;  ///< a slack report is carried (only when there is a new one, or now and then)
  std::int32_t input_slack_us = 0;
  Tick slack_tick = 0;
  std::uint32_t clock_shift = 0;  ///< ticks the server has moved its tick clock later in all
};
/// A decoded ServerPlay: the header and the frames.
struct ServerPlay : ServerPlayHeader {
  Tick first_tick = 0;  ///< tick of the first frame
  PackedFrames frames;  ///< per frame the masks; frames x players items in slot order
  [[nodiscard]] std::size_t frame_count() const { return frames.present.size(); }
};
/// `frames`: consecutive, at most kMaxWindow, of one player count and input size. `base`: the frame
/// just before the first, which the client is known to hold (its ack covers it), or nullptr; with
/// it the first frame's inputs travel as their difference to it.
Bytes server_play(std::span<const InputFrame* const> frames, const InputFrame* base, const ServerPlayHeader& h);
/// The frames of a ServerPlay encoded once: every message of a tick that carries the same frames
/// against the same base shares them (a server sends one window to many clients), and only the
/// header is written per message.
struct EncodedFrames {
  Tick first_tick = 0;     ///< tick of the first frame (0 when there are none)
  std::uint32_t count = 0; ///< frames, 0..kMaxWindow
  std::uint8_t flags = 0;  ///< the frames' flags of the message's first byte (§6.6)
  Bytes bytes;             ///< masks, inputs and commands, as they follow the header
};
/// Encodes `frames` against `base` (as server_play above) into `out`, reusing its buffer.
void encode_frames(std::span<const InputFrame* const> frames, const InputFrame* base, EncodedFrames& out);
/// The ServerPlay of `h` and pre-encoded `frames`, byte for byte what server_play above makes. The
/// bytes are this thread's and stay valid until its next call.
std::span<const std::uint8_t> server_play(const EncodedFrames& frames, const ServerPlayHeader& h);
/// Decodes a ServerPlay for a session of `players` slots of `input_size`-byte inputs into `out`.
/// `base(t)` gives the frame of tick t this client holds, or nullptr (then UnknownBase).
DecodeError decode_server_play(std::span<const std::uint8_t> bytes, std::uint32_t players, std::uint32_t input_size,
                               const std::function<const InputFrame*(Tick)>& base, ServerPlay& out);
/// Hands each frame of a decoded ServerPlay to `take`, in tick order.
void read_frames(const ServerPlay& m, std::uint32_t players, std::uint32_t input_size,
                 const std::function<void(const InputFrame&)>& take);

/// True when `name` is 1..kMaxNameBytes of printable ASCII.
bool valid_name(std::string_view name);
/// A Leave's reason: 1..kMaxReasonBytes printable ASCII (the other players read it).
inline constexpr std::size_t kMaxReasonBytes = 200;
bool valid_reason(std::string_view reason);

}  // namespace lockstep::protocol
