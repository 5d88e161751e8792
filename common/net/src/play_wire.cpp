// The compact play messages (docs/PROTOCOL.md §6.6): ClientPlay and ServerPlay, each a
// FlatBuffers root table whose one byte vector holds varint headers, XOR-chained and
// run-length-encoded inputs, and sparse commands. Encoders take the packed items of input.hpp;
// decoders are as strict as the verifier: every count bounded, every byte accounted for.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstring>

#include "lockstep/protocol.hpp"

namespace lockstep::protocol {
namespace {

// ---- writing ----

void put_varint(Bytes& out, std::uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

std::uint32_t zigzag(std::int64_t v) {
  return static_cast<std::uint32_t>(v >= 0 ? static_cast<std::uint64_t>(v) << 1
                                           : ((static_cast<std::uint64_t>(-(v + 1))) << 1) | 1);
}

// Zero runs (control 0..127: 1..128 zero bytes) and literal runs (control 128..255: 1..128 bytes
// that follow). A lone zero between other bytes stays in the literal run.
void put_rle(Bytes& out, std::span<const std::uint8_t> data) {
  std::size_t i = 0;
  while (i < data.size()) {
    std::size_t zeros = 0;
    while (i + zeros < data.size() && data[i + zeros] == 0 && zeros < 128) ++zeros;
    if (zeros >= 2 || (zeros == 1 && i + 1 == data.size())) {
      out.push_back(static_cast<std::uint8_t>(zeros - 1));
      i += zeros;
      continue;
    }
    std::size_t n = 0;
    while (i + n < data.size() && n < 128) {
      if (data[i + n] == 0 && (i + n + 1 == data.size() || data[i + n + 1] == 0)) break;
      ++n;
    }
    out.push_back(static_cast<std::uint8_t>(127 + n));
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(i), data.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
  }
}

// Items of `stride` bytes as the XOR chain of §6.6, run-length encoded: each item XOR the one
// before it, the first XOR `first_ref` (empty: zeros). A held key costs a zero run.
void put_chain(Bytes& out, std::span<const std::uint8_t> items, std::size_t stride,
               std::span<const std::uint8_t> first_ref) {
  thread_local std::vector<std::uint8_t> chain;
  chain.resize(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    chain[i] = static_cast<std::uint8_t>(items[i] ^ (i >= stride          ? items[i - stride]
                                                     : first_ref.empty() ? 0
                                                                         : first_ref[i]));
  put_rle(out, chain);
}

// Commands of `items` packed items: the number of items that have any, then per such item the
// gap since the previous one, its count and every command's size and bytes.
void put_commands(Bytes& out, const PackedInputs& p) {
  std::uint32_t with = 0;
  for (const std::uint8_t c : p.command_counts) with += c > 0 ? 1 : 0;
  put_varint(out, with);
  std::size_t size_at = 0, byte_at = 0;
  std::int64_t previous = -1;
  for (std::size_t item = 0; item < p.command_counts.size(); ++item) {
    const std::uint8_t count = p.command_counts[item];
    if (count == 0) continue;
    put_varint(out, static_cast<std::uint32_t>(static_cast<std::int64_t>(item) - previous - 1));
    previous = static_cast<std::int64_t>(item);
    out.push_back(count);
    for (std::uint8_t k = 0; k < count; ++k, ++size_at) {
      const std::uint16_t size = p.command_sizes[size_at];
      put_varint(out, size);
      out.insert(out.end(), p.command_bytes.begin() + static_cast<std::ptrdiff_t>(byte_at),
                 p.command_bytes.begin() + static_cast<std::ptrdiff_t>(byte_at + size));
      byte_at += size;
    }
  }
}

bool has_commands(const PackedInputs& p) {
  return std::any_of(p.command_counts.begin(), p.command_counts.end(), [](std::uint8_t c) { return c > 0; });
}

// A play message (ClientPlay or ServerPlay) is a root table of one byte vector. FlatBufferBuilder
// lays every such buffer out alike: the root offset (12), two bytes of padding, the vtable (6
// bytes: its size, the table's size 8, the field at 4), the table (its vtable 6 bytes back, the
// vector 4 bytes on), then the vector's length, its bytes and zeros to a multiple of 4. Written
// directly, that costs nothing beyond the body instead of a builder's work per message;
// tests/net/test_play_wire.cpp holds both messages byte-equal to the builder's, and every peer
// verifies what arrives.
constexpr std::uint8_t kPlayTablePrefix[20] = {12, 0, 0, 0, 0, 0, 6, 0, 8, 0, 4, 0, 6, 0, 0, 0, 4, 0, 0, 0};

// Starts a play buffer in `out`: the table, and room for the body's length. Returns where the body starts.
std::size_t begin_play(Bytes& out) {
  out.assign(std::begin(kPlayTablePrefix), std::end(kPlayTablePrefix));
  out.resize(out.size() + 4);
  return out.size();
}

// Ends a play buffer whose body, from `body_at`, is written: its length, then the padding.
void end_play(Bytes& out, std::size_t body_at) {
  const auto length = static_cast<std::uint32_t>(out.size() - body_at);
  for (int b = 0; b < 4; ++b) out[body_at - 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(length >> (8 * b));
  out.resize((out.size() + 3) & ~std::size_t{3}, 0);
}

// ---- reading ----

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
  bool byte(std::uint8_t* v) {
    if (at_ >= b_.size()) return false;
    *v = b_[at_++];
    return true;
  }
  // Unsigned LEB128 of at most 32 bits, in its shortest form.
  bool varint(std::uint32_t* v) {
    std::uint64_t x = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      std::uint8_t c = 0;
      if (!byte(&c)) return false;
      x |= std::uint64_t{c & 0x7fu} << shift;
      if ((c & 0x80) == 0) {
        if (shift > 0 && c == 0) return false;  // not the shortest form
        if (x > UINT32_MAX) return false;
        *v = static_cast<std::uint32_t>(x);
        return true;
      }
    }
    return false;
  }
  bool signed_varint(std::int64_t* v) {
    std::uint32_t z = 0;
    if (!varint(&z)) return false;
    *v = (z & 1) ? -static_cast<std::int64_t>(z >> 1) - 1 : static_cast<std::int64_t>(z >> 1);
    return true;
  }
  // A tick given as a signed offset from `ref`: false outside 0 .. 2^32 - 1.
  bool tick_from(Tick ref, Tick* t) {
    std::int64_t d = 0;
    if (!signed_varint(&d)) return false;
    const std::int64_t x = std::int64_t{ref} + d;
    if (x < 0 || x > std::int64_t{UINT32_MAX}) return false;
    *t = static_cast<Tick>(x);
    return true;
  }
  bool bytes(std::size_t n, std::span<const std::uint8_t>* out) {
    if (b_.size() - at_ < n) return false;
    *out = b_.subspan(at_, n);
    at_ += n;
    return true;
  }
  // Run-length-decodes exactly out.size() bytes.
  bool rle(std::span<std::uint8_t> out) {
    std::size_t i = 0;
    while (i < out.size()) {
      std::uint8_t c = 0;
      if (!byte(&c)) return false;
      if (c < 128) {
        const std::size_t n = std::size_t{c} + 1;
        if (n > out.size() - i) return false;
        std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(i), n, std::uint8_t{0});
        i += n;
      } else {
        const std::size_t n = std::size_t{c} - 127;
        std::span<const std::uint8_t> lit;
        if (n > out.size() - i || !bytes(n, &lit)) return false;
        std::copy(lit.begin(), lit.end(), out.begin() + static_cast<std::ptrdiff_t>(i));
        i += n;
      }
    }
    return true;
  }
  // The XOR chain of put_chain(): exactly out.size() bytes of items of `stride` bytes, the first
  // XOR `first_ref` (empty: zeros).
  bool chain(std::span<std::uint8_t> out, std::size_t stride, std::span<const std::uint8_t> first_ref) {
    if (!rle(out)) return false;
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::uint8_t>(out[i] ^ (i >= stride          ? out[i - stride]
                                                   : first_ref.empty() ? 0
                                                                       : first_ref[i]));
    return true;
  }
  [[nodiscard]] bool done() const { return at_ == b_.size(); }

 private:
  std::span<const std::uint8_t> b_;
  std::size_t at_ = 0;
};

bool read_commands(Reader& r, std::size_t items, PackedInputs& out) {
  std::uint32_t with = 0;
  if (!r.varint(&with) || with == 0 || with > items) return false;
  out.command_counts.assign(items, 0);
  std::int64_t previous = -1;
  for (std::uint32_t k = 0; k < with; ++k) {
    std::uint32_t gap = 0;
    std::uint8_t count = 0;
    if (!r.varint(&gap) || !r.byte(&count)) return false;
    const std::int64_t item = previous + 1 + std::int64_t{gap};
    if (item >= static_cast<std::int64_t>(items) || count == 0 || count > kMaxCommandsPerTick) return false;
    previous = item;
    out.command_counts[static_cast<std::size_t>(item)] = count;
    std::size_t total = 0;
    for (std::uint8_t c = 0; c < count; ++c) {
      std::uint32_t size = 0;
      std::span<const std::uint8_t> bytes;
      if (!r.varint(&size) || size == 0 || size > kMaxCommandBytesPerTick - total || !r.bytes(size, &bytes)) return false;
      total += size;
      out.command_sizes.push_back(static_cast<std::uint16_t>(size));
      out.command_bytes.insert(out.command_bytes.end(), bytes.begin(), bytes.end());
    }
  }
  return true;
}

// The body of a verified play buffer of root table `Table`; nullopt-like empty span and `error`
// set when the buffer is not one.
template <class Table>
bool play_body(std::span<const std::uint8_t> bytes, std::span<const std::uint8_t>* body, DecodeError* error) {
  if (bytes.size() > kMaxDetailMessageBytes) {
    *error = DecodeError::TooLarge;
    return false;
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/4, /*max_tables=*/4);
  if (bytes.size() < 8 || is_message(bytes) || !verifier.VerifyBuffer<Table>(nullptr)) {
    *error = DecodeError::NotFlatBuffer;
    return false;
  }
  const auto* v = flatbuffers::GetRoot<Table>(bytes.data())->body();
  *body = std::span<const std::uint8_t>(v->data(), v->size());
  return true;
}

enum ClientFlag : std::uint8_t { kInputs = 1, kClientCommands = 2, kHashes = 4, kEpoch = 8, kLead = 16 };
enum ServerFlag : std::uint8_t { kFrames = 1, kMasks = 2, kServerCommands = 4, kBased = 8, kSlack = 16, kShift = 32 };

}  // namespace

bool is_message(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 8 && flatbuffers::BufferHasIdentifier(bytes.data(), wire::MessageIdentifier());
}

Bytes client_play(const ClientPlay& m) {
  thread_local Bytes body;
  const std::size_t body_at = begin_play(body);
  const bool inputs = m.input_count > 0, commands = inputs && has_commands(m.inputs), hashes = !m.hashes.empty();
  body.push_back(static_cast<std::uint8_t>((inputs ? kInputs : 0) | (commands ? kClientCommands : 0) |
                                           (hashes ? kHashes : 0) | (m.epoch != 0 ? kEpoch : 0) |
                                           (m.has_lead ? kLead : 0)));
  put_varint(body, m.frame_ack);
  if (inputs) {
    put_varint(body, zigzag(std::int64_t{m.input_first_tick} - m.frame_ack));
    put_varint(body, m.input_count);
    // The first input against zeros: the server may not hold the one before it (§6.6).
    put_chain(body, m.inputs.input_bytes, m.inputs.input_bytes.size() / m.input_count, {});
    if (commands) put_commands(body, m.inputs);
  }
  if (hashes) {
    put_varint(body, zigzag(std::int64_t{m.hash_first_tick} - m.frame_ack));
    put_varint(body, static_cast<std::uint32_t>(m.hashes.size()));
    for (const std::uint64_t h : m.hashes)
      for (int b = 0; b < 8; ++b) body.push_back(static_cast<std::uint8_t>(h >> (8 * b)));
  }
  if (m.epoch != 0) put_varint(body, m.epoch);
  if (m.has_lead) put_varint(body, zigzag(m.lead_us));
  end_play(body, body_at);
  return body;
}

DecodeError decode_client_play(std::span<const std::uint8_t> bytes, std::uint32_t input_size, ClientPlay& out) {
  DecodeError error = DecodeError::None;
  std::span<const std::uint8_t> body;
  if (!play_body<wire::ClientPlay>(bytes, &body, &error)) return error;
  out = ClientPlay{.inputs = std::move(out.inputs), .hashes = std::move(out.hashes)};  // keeps the storage
  out.inputs.clear();
  out.hashes.clear();
  Reader r(body);
  std::uint8_t flags = 0;
  if (!r.byte(&flags) || (flags & ~0x1fu) != 0 || !r.varint(&out.frame_ack)) return DecodeError::FieldOutOfRange;
  if ((flags & kClientCommands) && !(flags & kInputs)) return DecodeError::FieldOutOfRange;
  if (flags & kInputs) {
    if (!r.tick_from(out.frame_ack, &out.input_first_tick) || !r.varint(&out.input_count) || out.input_count == 0 ||
        out.input_count > kMaxWindow || input_size > kMaxInputBytes)
      return DecodeError::FieldOutOfRange;
    out.inputs.input_bytes.resize(std::size_t{out.input_count} * input_size);
    if (!r.chain(out.inputs.input_bytes, input_size, {})) return DecodeError::FieldOutOfRange;
    if ((flags & kClientCommands) && !read_commands(r, out.input_count, out.inputs)) return DecodeError::FieldOutOfRange;
  }
  if (flags & kHashes) {
    std::uint32_t n = 0;
    std::span<const std::uint8_t> raw;
    if (!r.tick_from(out.frame_ack, &out.hash_first_tick) || !r.varint(&n) || n == 0 || n > kMaxWindow ||
        !r.bytes(std::size_t{n} * 8, &raw))
      return DecodeError::FieldOutOfRange;
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint64_t h = 0;
      for (int b = 7; b >= 0; --b) h = (h << 8) | raw[i * 8 + static_cast<std::uint32_t>(b)];
      out.hashes.push_back(h);
    }
  }
  if ((flags & kEpoch) && (!r.varint(&out.epoch) || out.epoch == 0)) return DecodeError::FieldOutOfRange;
  if (flags & kLead) {
    std::int64_t lead = 0;
    if (!r.signed_varint(&lead) || lead < INT32_MIN || lead > INT32_MAX) return DecodeError::FieldOutOfRange;
    out.has_lead = true;
    out.lead_us = static_cast<std::int32_t>(lead);
  }
  if (!r.done()) return DecodeError::FieldOutOfRange;
  return DecodeError::None;
}

void encode_frames(std::span<const InputFrame* const> frames, const InputFrame* base, EncodedFrames& out) {
  Bytes& body = out.bytes;
  body.clear();
  out.count = static_cast<std::uint32_t>(frames.size());
  out.first_tick = frames.empty() ? 0 : frames.front()->tick;
  out.flags = 0;
  if (frames.empty()) return;
  const std::uint32_t players = frames.front()->players;
  const std::size_t stride = frames.front()->inputs.size();
  bool masks = false, any_commands = false, whole = base == nullptr || base->inputs.size() == stride;
  for (const InputFrame* f : frames) {
    masks = masks || f->present != slot_mask(players) || f->filled != 0;
    any_commands = any_commands || !f->commands.empty();
    whole = whole && f->inputs.size() == stride && stride == std::size_t{f->players} * f->input_size;
  }
  // Frames with commands, or of uneven sizes, are packed, and the commands flag is what packing
  // kept (it drops a command of a slot past the frame's players).
  thread_local PackedFrames packed;
  const bool packs = any_commands || !whole;
  if (packs) pack_frames(frames, packed);
  const bool commands = packs && has_commands(packed.items);
  out.flags = static_cast<std::uint8_t>(kFrames | (masks ? kMasks : 0) | (commands ? kServerCommands : 0) |
                                        (base != nullptr ? kBased : 0));
  if (masks) {
    std::uint32_t present = slot_mask(players), filled = 0;
    for (const InputFrame* f : frames) {
      const bool same = f->present == present && f->filled == filled;
      body.push_back(same ? 0 : 1);
      if (same) continue;
      present = f->present;
      filled = f->filled;
      put_varint(body, present);
      put_varint(body, filled);
    }
  }
  // The first frame against the base frame, or zeros.
  // Frames without commands, the common case, chain their inputs as they lie (each frame's players x
  // input_size bytes, what packing would lay end to end), gathered without packing them.
  thread_local std::vector<std::uint8_t> gathered;
  if (!packs) {
    gathered.clear();
    for (const InputFrame* f : frames) gathered.insert(gathered.end(), f->inputs.begin(), f->inputs.end());
  }
  const std::vector<std::uint8_t>& items = packs ? packed.items.input_bytes : gathered;
  put_chain(body, items, items.size() / frames.size(),
            base != nullptr ? std::span<const std::uint8_t>(base->inputs) : std::span<const std::uint8_t>());
  if (commands) put_commands(body, packed.items);
}

std::span<const std::uint8_t> server_play(const EncodedFrames& frames, const ServerPlayHeader& h) {
  thread_local Bytes out;
  const std::size_t body_at = begin_play(out);
  const std::uint32_t n = frames.count;
  const Tick ref = n ? frames.first_tick : h.hash_ack;
  out.push_back(static_cast<std::uint8_t>(frames.flags | (h.has_slack ? kSlack : 0) | (h.clock_shift != 0 ? kShift : 0)));
  put_varint(out, ref);
  if (n) put_varint(out, n);
  put_varint(out, zigzag(std::int64_t{h.input_ack} - ref));
  put_varint(out, zigzag(std::int64_t{h.hash_ack} - ref));
  if (h.has_slack) {
    put_varint(out, zigzag(h.input_slack_us));
    put_varint(out, zigzag(std::int64_t{h.slack_tick} - ref));
  }
  if (h.clock_shift != 0) put_varint(out, h.clock_shift);
  out.insert(out.end(), frames.bytes.begin(), frames.bytes.end());
  end_play(out, body_at);
  return out;
}

Bytes server_play(std::span<const InputFrame* const> frames, const InputFrame* base, const ServerPlayHeader& h) {
  thread_local EncodedFrames encoded;
  encode_frames(frames, base, encoded);
  const auto bytes = server_play(encoded, h);
  return Bytes(bytes.begin(), bytes.end());
}

DecodeError decode_server_play(std::span<const std::uint8_t> bytes, std::uint32_t players, std::uint32_t input_size,
                               const std::function<const InputFrame*(Tick)>& base, ServerPlay& out) {
  DecodeError error = DecodeError::None;
  std::span<const std::uint8_t> body;
  if (!play_body<wire::ServerPlay>(bytes, &body, &error)) return error;
  out.frames.present.clear();
  out.frames.filled.clear();
  out.frames.items.clear();
  out.has_slack = false;
  out.input_slack_us = 0;
  out.slack_tick = 0;
  out.clock_shift = 0;
  if (players < 1 || players > kMaxPlayers || input_size > kMaxInputBytes) return DecodeError::FieldOutOfRange;
  Reader r(body);
  std::uint8_t flags = 0;
  Tick ref = 0;
  std::uint32_t n = 0;
  if (!r.byte(&flags) || (flags & ~0x3fu) != 0 || !r.varint(&ref)) return DecodeError::FieldOutOfRange;
  if ((flags & (kMasks | kServerCommands | kBased)) && !(flags & kFrames)) return DecodeError::FieldOutOfRange;
  if ((flags & kFrames) && (!r.varint(&n) || n == 0 || n > kMaxWindow || std::uint64_t{ref} + n - 1 > UINT32_MAX))
    return DecodeError::FieldOutOfRange;
  out.first_tick = n ? ref : 0;
  if (!r.tick_from(ref, &out.input_ack) || !r.tick_from(ref, &out.hash_ack)) return DecodeError::FieldOutOfRange;
  if (flags & kSlack) {
    std::int64_t slack = 0;
    if (!r.signed_varint(&slack) || slack < INT32_MIN || slack > INT32_MAX || !r.tick_from(ref, &out.slack_tick))
      return DecodeError::FieldOutOfRange;
    out.has_slack = true;
    out.input_slack_us = static_cast<std::int32_t>(slack);
  }
  if ((flags & kShift) && (!r.varint(&out.clock_shift) || out.clock_shift == 0)) return DecodeError::FieldOutOfRange;
  if (n) {
    std::uint32_t present = slot_mask(players), filled = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (flags & kMasks) {
        std::uint8_t marker = 0;
        if (!r.byte(&marker) || marker > 1) return DecodeError::FieldOutOfRange;
        if (marker == 1 && (!r.varint(&present) || !r.varint(&filled) || (present & ~slot_mask(players)) != 0 ||
                            (filled & ~present) != 0))
          return DecodeError::FieldOutOfRange;
      }
      out.frames.present.push_back(present);
      out.frames.filled.push_back(filled);
    }
    const std::size_t size = std::size_t{players} * input_size;
    auto& in = out.frames.items.input_bytes;
    in.resize(size * n);
    // The runs are checked before the base is asked for (§2: step 3, then 4).
    const InputFrame* held = (flags & kBased) && ref > 1 ? base(ref - 1) : nullptr;
    const bool base_held = held != nullptr && held->tick == ref - 1 && held->inputs.size() == size;
    if (!r.chain(in, size, base_held ? std::span<const std::uint8_t>(held->inputs) : std::span<const std::uint8_t>()))
      return DecodeError::FieldOutOfRange;
    if ((flags & kBased) && !base_held) return DecodeError::UnknownBase;
    if ((flags & kServerCommands) && !read_commands(r, std::size_t{n} * players, out.frames.items))
      return DecodeError::FieldOutOfRange;
    // An absent slot carries zeros and no commands.
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t p = 0; p < players; ++p) {
        if (out.frames.present[i] & (1u << p)) continue;
        const std::size_t item = std::size_t{i} * players + p;
        const auto first = in.begin() + static_cast<std::ptrdiff_t>(item * input_size);
        if (std::any_of(first, first + input_size, [](std::uint8_t b) { return b != 0; })) return DecodeError::FieldOutOfRange;
        if (!out.frames.items.command_counts.empty() && out.frames.items.command_counts[item] != 0)
          return DecodeError::FieldOutOfRange;
      }
  }
  if (!r.done()) return DecodeError::FieldOutOfRange;
  return DecodeError::None;
}

void read_frames(const ServerPlay& m, std::uint32_t players, std::uint32_t input_size,
                 const std::function<void(const InputFrame&)>& take) {
  thread_local InputFrame f;
  thread_local Commands scratch;
  PackedReader r(m.frames.items.view(), input_size);
  for (std::size_t i = 0; i < m.frame_count(); ++i) {
    read_frame(r, m.first_tick + static_cast<Tick>(i), players, input_size, m.frames.present[i], m.frames.filled[i], f,
               scratch);
    take(f);
  }
}

}  // namespace lockstep::protocol
