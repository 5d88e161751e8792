// The compact play messages (docs/PROTOCOL.md §6.6): what the encoders write comes back from the
// decoders field for field, whatever the window, masks, base and commands; every malformed body
// is refused with its error; and an unchanged frame costs a few bytes.
#include <doctest/doctest.h>
#include <flatbuffers/flatbuffers.h>

#include <vector>

#include "lockstep/protocol.hpp"
#include "lockstep/rng.hpp"

using namespace lockstep;
using protocol::Bytes;
using protocol::DecodeError;

namespace {

// A play buffer of root table T around a body written by hand.
template <class T>
Bytes play_buffer(const std::vector<std::uint8_t>& body) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto v = fbb.CreateVector(body);
  typename T::Builder b(fbb);
  b.add_body(v);
  fbb.Finish(b.Finish());
  return Bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

template <class T>
std::vector<std::uint8_t> body_of(const Bytes& buffer) {
  const auto* v = flatbuffers::GetRoot<T>(buffer.data())->body();
  return {v->begin(), v->end()};
}

// A play buffer of root T around `body` with `drop` bytes at `at` replaced by `bytes`.
template <class T>
Bytes edited(std::vector<std::uint8_t> body, std::size_t at, const std::vector<std::uint8_t>& bytes, std::size_t drop) {
  body.erase(body.begin() + static_cast<std::ptrdiff_t>(at), body.begin() + static_cast<std::ptrdiff_t>(at + drop));
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin(), bytes.end());
  return play_buffer<T>(body);
}

// Random bytes that often repeat the previous ones, as held keys do.
std::uint8_t sticky(Rng& rng, std::uint8_t previous) {
  return rng.below(4) == 0 ? static_cast<std::uint8_t>(rng.next_u32()) : previous;
}

void random_commands(Rng& rng, Commands& c) {
  c.clear();
  if (rng.below(5) != 0) return;
  const std::uint32_t n = 1 + rng.below(8);
  for (std::uint32_t k = 0; k < n; ++k) {
    std::vector<std::uint8_t> cmd(1 + rng.below(100));
    for (auto& b : cmd) b = static_cast<std::uint8_t>(rng.next_u32());
    c.add(cmd);  // refused past the tick's limits, like a client's
  }
}

protocol::ClientPlay decode_up(const Bytes& b, std::uint32_t input_size, DecodeError want = DecodeError::None) {
  protocol::ClientPlay m;
  CHECK(protocol::decode_client_play(b, input_size, m) == want);
  return m;
}

}  // namespace

TEST_SUITE("net/play_wire") {
  TEST_CASE("a ClientPlay comes back field for field for any window, input size and commands") {
    Rng rng = Rng::seeded(7);
    for (const std::uint32_t size : {0u, 1u, 2u, 7u, 64u})
      for (int round = 0; round < 40; ++round) {
        CAPTURE(size);
        CAPTURE(round);
        const std::uint32_t count = rng.below(33);
        std::vector<PlayerTick> ticks(count, PlayerTick{std::vector<std::uint8_t>(size, 0), {}});
        for (std::uint32_t i = 0; i < count; ++i) {
          for (std::uint32_t b = 0; b < size; ++b) ticks[i].input[b] = sticky(rng, i ? ticks[i - 1].input[b] : 0);
          random_commands(rng, ticks[i].commands);
        }
        std::vector<const PlayerTick*> ptrs;
        for (const PlayerTick& t : ticks) ptrs.push_back(&t);
        protocol::ClientPlay m;
        m.frame_ack = rng.below(2) ? rng.next_u32() >> rng.below(32) : 0;
        m.input_first_tick = count ? m.frame_ack + rng.below(60) : 0;
        m.input_count = count;
        pack_ticks(ptrs, m.inputs);
        const std::uint32_t hashes = rng.below(33);
        m.hash_first_tick = hashes ? m.frame_ack - std::min(m.frame_ack, rng.below(40)) : 0;
        for (std::uint32_t i = 0; i < hashes; ++i) m.hashes.push_back((std::uint64_t{rng.next_u32()} << 32) | rng.next_u32());
        m.epoch = rng.below(3);
        m.has_lead = rng.below(2) == 0;
        m.lead_us = m.has_lead ? static_cast<std::int32_t>(rng.below(20'000'000)) - 10'000'000 : 0;
        const Bytes bytes = protocol::client_play(m);
        // Laid out directly: byte for byte what FlatBufferBuilder makes of the same body.
        CHECK(bytes == play_buffer<wire::ClientPlay>(body_of<wire::ClientPlay>(bytes)));
        const protocol::ClientPlay back = decode_up(bytes, size);
        CHECK(back.frame_ack == m.frame_ack);
        CHECK(back.input_count == m.input_count);
        CHECK(back.input_first_tick == m.input_first_tick);
        CHECK(back.inputs.input_bytes == m.inputs.input_bytes);
        CHECK(back.hash_first_tick == m.hash_first_tick);
        CHECK(back.hashes == m.hashes);
        CHECK(back.epoch == m.epoch);
        CHECK(back.has_lead == m.has_lead);
        CHECK(back.lead_us == m.lead_us);
        // Commands: the same per tick (the encoder leaves out the counts of a window without any).
        PackedReader a(m.inputs.view(), size), b(back.inputs.view(), size);
        Commands ca, cb;
        for (std::uint32_t i = 0; i < count; ++i) {
          CHECK(std::ranges::equal(a.next(&ca), b.next(&cb)));
          CHECK(ca == cb);
        }
        CHECK(check_packed(back.inputs.view(), count, size).empty());
      }
  }

  TEST_CASE("a ServerPlay comes back frame for frame, with or without a base, masks and commands") {
    Rng rng = Rng::seeded(11);
    for (const std::uint32_t players : {1u, 2u, 8u, 32u})
      for (const std::uint32_t size : {0u, 2u, 5u})
        for (int round = 0; round < 25; ++round) {
          CAPTURE(players);
          CAPTURE(size);
          CAPTURE(round);
          const std::uint32_t n = rng.below(33);
          const Tick first = 2 + rng.below(100'000);
          std::vector<InputFrame> frames(n + 1);  // [0] is the base, first - 1
          std::size_t command_bytes = 0;          // kept within a message's budget, as the server does
          for (std::uint32_t i = 0; i <= n; ++i) {
            InputFrame& f = frames[i];
            f.reset(first - 1 + i, players, size);
            f.present = rng.below(4) == 0 ? rng.next_u32() & slot_mask(players) : slot_mask(players);
            f.filled = rng.below(3) == 0 ? rng.next_u32() & f.present : 0;
            for (std::uint32_t p = 0; p < players; ++p) {
              if (!(f.present & (1u << p))) continue;
              for (std::uint32_t b = 0; b < size; ++b)
                f.input(p)[b] = sticky(rng, i ? frames[i - 1].input(p)[b] : static_cast<std::uint8_t>(rng.next_u32()));
              Commands c;
              random_commands(rng, c);
              if ((command_bytes += c.bytes()) > protocol::kPlayCommandBudget) c.clear();
              f.add_commands(p, c);
            }
          }
          std::vector<const InputFrame*> ptrs;
          for (std::uint32_t i = 1; i <= n; ++i) ptrs.push_back(&frames[i]);
          const bool based = rng.below(2) == 0;
          protocol::ServerPlayHeader h;
          h.input_ack = first + rng.below(50);
          h.hash_ack = first - 1 - std::min(first - 1, rng.below(50));
          h.has_slack = rng.below(2) == 0;
          h.input_slack_us = h.has_slack ? static_cast<std::int32_t>(rng.next_u32()) : 0;
          h.slack_tick = h.has_slack ? first + rng.below(40) : 0;
          h.clock_shift = rng.below(3) == 0 ? rng.below(1000) : 0;
          const Bytes bytes = protocol::server_play(ptrs, based ? &frames[0] : nullptr, h);
          const auto base = [&](Tick t) -> const InputFrame* { return t == frames[0].tick ? &frames[0] : nullptr; };
          protocol::ServerPlay back;
          REQUIRE(protocol::decode_server_play(bytes, players, size, base, back) == DecodeError::None);
          CHECK(back.frame_count() == n);
          CHECK(back.input_ack == h.input_ack);
          CHECK(back.hash_ack == h.hash_ack);
          CHECK(back.has_slack == h.has_slack);
          CHECK(back.input_slack_us == h.input_slack_us);
          CHECK(back.slack_tick == h.slack_tick);
          CHECK(back.clock_shift == h.clock_shift);
          std::uint32_t i = 1;
          protocol::read_frames(back, players, size, [&](const InputFrame& f) { CHECK(f == frames[i++]); });
          CHECK(i == n + 1);
          // The server encodes a window once and writes only the header per client: the same
          // shared encoding under another header decodes to that header and the same frames.
          protocol::EncodedFrames shared;
          protocol::encode_frames(ptrs, based ? &frames[0] : nullptr, shared);
          protocol::ServerPlayHeader other = h;
          other.input_ack = h.input_ack + 1 + rng.below(5);
          other.has_slack = !h.has_slack;
          other.input_slack_us = other.has_slack ? -1234 : 0;
          other.slack_tick = other.has_slack ? first + 3 : 0;
          const auto view = protocol::server_play(shared, other);
          const Bytes from_shared(view.begin(), view.end());
          protocol::ServerPlay again;
          REQUIRE(protocol::decode_server_play(from_shared, players, size, base, again) == DecodeError::None);
          CHECK(again.input_ack == other.input_ack);
          CHECK(again.hash_ack == other.hash_ack);
          CHECK(again.has_slack == other.has_slack);
          CHECK(again.input_slack_us == other.input_slack_us);
          CHECK(again.slack_tick == other.slack_tick);
          i = 1;
          protocol::read_frames(again, players, size, [&](const InputFrame& f) { CHECK(f == frames[i++]); });
          // The server lays the buffer out by hand: byte for byte what FlatBufferBuilder makes.
          CHECK(from_shared == play_buffer<wire::ServerPlay>(body_of<wire::ServerPlay>(from_shared)));
          CHECK(again.frame_count() == n);
        }
  }

  TEST_CASE("frames without commands are encoded as §6.6 writes them: the XOR chain from the frames, run-length encoded") {
    // Three frames of 2 players with 2-byte inputs, no commands and every slot present: the items
    // chained (each frame XOR the one before, the first as it is, or XOR the base), then zero runs
    // (control 0..127) and literal runs (128..255).
    std::vector<InputFrame> frames(4);
    const std::uint8_t inputs[4][4] = {{9, 9, 9, 9}, {1, 2, 3, 4}, {1, 2, 3, 5}, {1, 2, 3, 5}};
    for (std::uint32_t i = 0; i < 4; ++i) {
      frames[i].reset(100 + i, 2, 2);
      frames[i].present = slot_mask(2);
      std::copy(inputs[i], inputs[i] + 4, frames[i].inputs.begin());
    }
    const std::vector<const InputFrame*> window{&frames[1], &frames[2], &frames[3]};
    protocol::EncodedFrames out;
    protocol::encode_frames(window, nullptr, out);
    // 1 2 3 4 | 0 0 0 1 | 0 0 0 0: four literals, three zeros, one literal, four zeros.
    CHECK(out.bytes == Bytes{131, 1, 2, 3, 4, 2, 128, 1, 3});
    CHECK(out.count == 3);
    CHECK(out.first_tick == 101);
    protocol::encode_frames(window, &frames[0], out);
    // 8 11 10 13 | 0 0 0 1 | 0 0 0 0 against the base 9 9 9 9.
    CHECK(out.bytes == Bytes{131, 8, 11, 10, 13, 2, 128, 1, 3});
    // A frame with a slot missing writes the masks first, per frame against the one before (all
    // present, none filled, before the first): unchanged (0), or changed (1, then both).
    frames[2].present = 1;
    frames[2].filled = 1;
    protocol::encode_frames(window, nullptr, out);
    CHECK(out.bytes == Bytes{0, 1, 1, 1, 1, 3, 0, 131, 1, 2, 3, 4, 2, 128, 1, 3});
  }

  TEST_CASE("frames of no input bytes encode to no chain, and a command of no player's slot is left out, not announced") {
    std::vector<InputFrame> frames(2);
    for (std::uint32_t i = 0; i < 2; ++i) {
      frames[i].reset(10 + i, 2, 0);
      frames[i].present = slot_mask(2);
    }
    const std::vector<const InputFrame*> window{&frames[0], &frames[1]};
    protocol::EncodedFrames out;
    protocol::encode_frames(window, nullptr, out);
    CHECK(out.bytes.empty());
    // A command of slot 5 in a 2-player frame: packing drops it, so the message carries no
    // commands block (announcing one with no item would be refused by every decoder).
    std::vector<InputFrame> two(2);
    for (std::uint32_t i = 0; i < 2; ++i) {
      two[i].reset(20 + i, 2, 1);
      two[i].present = slot_mask(2);
      two[i].inputs = {std::uint8_t(i), 7};
    }
    Commands c;
    c.add(std::vector<std::uint8_t>{1, 2, 3});
    two[1].add_commands(5, c);
    const std::vector<const InputFrame*> ptrs{&two[0], &two[1]};
    const Bytes bytes = protocol::server_play(ptrs, nullptr, protocol::ServerPlayHeader{});
    protocol::ServerPlay back;
    REQUIRE(protocol::decode_server_play(bytes, 2, 1, [](Tick) -> const InputFrame* { return nullptr; }, back) ==
            DecodeError::None);
    std::uint32_t i = 0;
    protocol::read_frames(back, 2, 1, [&](const InputFrame& f) {
      CHECK(f.inputs == two[i].inputs);
      CHECK(f.commands.empty());
      ++i;
    });
    CHECK(i == 2);
  }

  TEST_CASE("a ServerPlay laid out by hand is FlatBufferBuilder's buffer for every body length") {
    // Frames of 1..kMaxWindow ticks whose commands make bodies of every length from a few bytes
    // to a few kilobytes, each under headers with and without the optional fields.
    Rng rng(7);
    for (std::uint32_t command = 0; command < 600; ++command) {
      std::vector<InputFrame> frames(1);
      frames[0].reset(10, 2, 2);
      frames[0].present = slot_mask(2);
      Commands c;
      if (command > 0) c.add(std::vector<std::uint8_t>(command, static_cast<std::uint8_t>(command)));
      frames[0].add_commands(1, c);
      const std::vector<const InputFrame*> ptrs{&frames[0]};
      protocol::EncodedFrames encoded;
      protocol::encode_frames(ptrs, nullptr, encoded);
      protocol::ServerPlayHeader h;
      h.input_ack = 9 + rng.below(3);
      h.hash_ack = 8;
      h.has_slack = command % 2 == 0;
      h.input_slack_us = h.has_slack ? -static_cast<std::int32_t>(command) : 0;
      h.slack_tick = h.has_slack ? 11 : 0;
      h.clock_shift = command % 3;
      for (const bool empty : {false, true}) {
        const auto view = protocol::server_play(empty ? protocol::EncodedFrames{} : encoded, h);
        const Bytes ours(view.begin(), view.end());
        CAPTURE(command);
        CHECK(ours.size() % 4 == 0);
        CHECK(ours == play_buffer<wire::ServerPlay>(body_of<wire::ServerPlay>(ours)));
        flatbuffers::Verifier v(ours.data(), ours.size());
        CHECK(v.VerifyBuffer<wire::ServerPlay>(nullptr));
      }
    }
  }

  TEST_CASE("a ClientPlay laid out directly is FlatBufferBuilder's buffer for every body length") {
    // One tick of input whose one command grows a byte at a time: bodies of every length modulo 4.
    for (std::uint32_t command = 0; command < 300; ++command) {
      CAPTURE(command);
      PlayerTick t{{1, 2}, {}};
      if (command > 0) t.commands.add(std::vector<std::uint8_t>(command, static_cast<std::uint8_t>(command)));
      const std::vector<const PlayerTick*> ptrs{&t};
      protocol::ClientPlay m;
      m.frame_ack = 100 + command;
      m.input_first_tick = m.frame_ack + 3;
      m.input_count = 1;
      pack_ticks(ptrs, m.inputs);
      m.has_lead = command % 2 == 0;
      m.lead_us = static_cast<std::int32_t>(command) * 1000;
      const Bytes ours = protocol::client_play(m);
      CHECK(ours.size() % 4 == 0);
      CHECK(ours == play_buffer<wire::ClientPlay>(body_of<wire::ClientPlay>(ours)));
      flatbuffers::Verifier v(ours.data(), ours.size());
      CHECK(v.VerifyBuffer<wire::ClientPlay>(nullptr));
    }
  }

  TEST_CASE("every malformed ClientPlay is refused") {
    // A valid body for 2-byte inputs: inputs and a command on the second of two ticks, one hash.
    std::vector<PlayerTick> ticks(2, PlayerTick{{1, 2}, {}});
    ticks[1].commands.add(std::vector<std::uint8_t>{9, 9});
    const std::vector<const PlayerTick*> ptrs{&ticks[0], &ticks[1]};
    protocol::ClientPlay m;
    m.frame_ack = 300;
    m.input_first_tick = 303;
    m.input_count = 2;
    pack_ticks(ptrs, m.inputs);
    m.hash_first_tick = 300;
    m.hashes = {0x0123456789abcdefULL};
    const Bytes good = protocol::client_play(m);
    const auto body = body_of<wire::ClientPlay>(good);
    // flags 7 (inputs, commands, hashes); ack 300 = ac 02; +3 = zigzag 6; 2 ticks; inputs 1 2 then
    // their XOR 0 0: a literal run of 2 (0x81 1 2), a zero run of 2 (0x01); one item with commands:
    // gap 1, 1 command of 2 bytes 9 9; hash tick +0, 1 hash, 8 bytes little-endian.
    const std::vector<std::uint8_t> want{7, 0xac, 0x02, 6, 2, 0x81, 1, 2, 0x01, 1, 1, 1, 2, 9, 9, 0, 1,
                                         0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01};
    CHECK(body == want);
    decode_up(good, 2);
    for (std::size_t cut = 0; cut < body.size(); ++cut) {
      CAPTURE(cut);
      decode_up(play_buffer<wire::ClientPlay>({body.begin(), body.begin() + static_cast<std::ptrdiff_t>(cut)}), 2,
                DecodeError::FieldOutOfRange);
    }
    auto with = [&](std::size_t at, const std::vector<std::uint8_t>& bytes, std::size_t drop = 1) {
      return edited<wire::ClientPlay>(body, at, bytes, drop);
    };
    struct Case {
      const char* what;
      Bytes bytes;
      std::uint32_t input_size;
      DecodeError want;
    };
    auto extra = body;
    extra.push_back(0);
    const std::vector<Case> cases{
        {"a byte past the end", play_buffer<wire::ClientPlay>(extra), 2, DecodeError::FieldOutOfRange},
        {"another input size", good, 3, DecodeError::FieldOutOfRange},
        {"an unknown flag", with(0, {7 | 0x20}), 2, DecodeError::FieldOutOfRange},
        {"commands without inputs", with(0, {2}), 2, DecodeError::FieldOutOfRange},
        {"a varint not in its shortest form", with(1, {0xac, 0x82, 0x00}, 2), 2, DecodeError::FieldOutOfRange},
        {"a varint past 32 bits", with(1, {0xff, 0xff, 0xff, 0xff, 0x7f}, 2), 2, DecodeError::FieldOutOfRange},
        {"an input tick before 0", with(3, {0xff, 0x0f}), 2, DecodeError::FieldOutOfRange},
        {"33 inputs", with(4, {33}), 2, DecodeError::FieldOutOfRange},
        {"no inputs but the flag", with(4, {0}), 2, DecodeError::FieldOutOfRange},
        {"a zero run past the inputs", with(8, {0x02}), 2, DecodeError::FieldOutOfRange},
        {"commands on a third tick of two", with(10, {2}), 2, DecodeError::FieldOutOfRange},
        {"9 commands on a tick", with(11, {9}), 2, DecodeError::FieldOutOfRange},
        {"an empty command", with(12, {0}), 2, DecodeError::FieldOutOfRange},
        {"a 513-byte command", with(12, {0x81, 0x04}), 2, DecodeError::FieldOutOfRange},
        {"no item with commands but the flag", with(9, {0}), 2, DecodeError::FieldOutOfRange},
        {"33 hashes", with(16, {33}), 2, DecodeError::FieldOutOfRange},
        {"a Message", protocol::leave("x"), 2, DecodeError::NotFlatBuffer},
        {"random bytes", Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, DecodeError::NotFlatBuffer},
        {"larger than a play message may be", Bytes(protocol::kMaxDetailMessageBytes + 1, 0), 2, DecodeError::TooLarge},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      decode_up(c.bytes, c.input_size, c.want);
    }
  }

  TEST_CASE("every malformed ServerPlay is refused, and frames against a base not held are told apart") {
    InputFrame base, f;
    base.reset(9, 2, 2);
    base.present = 3;
    base.inputs = {1, 2, 3, 4};
    f = base;
    f.tick = 10;
    f.filled = 2;
    const InputFrame* frames[1] = {&f};
    const protocol::ServerPlayHeader h{.input_ack = 12, .hash_ack = 8};
    const Bytes good = protocol::server_play(frames, &base, h);
    const auto body = body_of<wire::ServerPlay>(good);
    // flags 11 (frames, masks, based); first tick 10; 1 frame; input ack +2 = 4, hash ack -2 = 3;
    // masks changed: 1, present 3, filled 2; inputs all unchanged from the base: one zero run of 4.
    const std::vector<std::uint8_t> want{11, 10, 1, 4, 3, 1, 3, 2, 0x03};
    CHECK(body == want);
    const auto held = [&](Tick t) -> const InputFrame* { return t == 9 ? &base : nullptr; };
    const auto none = [](Tick) -> const InputFrame* { return nullptr; };
    const auto decode = [&](const Bytes& b, std::uint32_t players, const auto& base_of) {
      protocol::ServerPlay m;
      return protocol::decode_server_play(b, players, 2, base_of, m);
    };
    CHECK(decode(good, 2, held) == DecodeError::None);
    CHECK(decode(good, 2, none) == DecodeError::UnknownBase);
    CHECK(decode(good, 3, held) == DecodeError::FieldOutOfRange);  // 6 input bytes wanted, 4 given
    for (std::size_t cut = 0; cut < body.size(); ++cut) {
      CAPTURE(cut);
      CHECK(decode(play_buffer<wire::ServerPlay>({body.begin(), body.begin() + static_cast<std::ptrdiff_t>(cut)}), 2,
                   held) == DecodeError::FieldOutOfRange);
    }
    auto with = [&](std::size_t at, const std::vector<std::uint8_t>& bytes, std::size_t drop = 1) {
      return edited<wire::ServerPlay>(body, at, bytes, drop);
    };
    struct Case {
      const char* what;
      Bytes bytes;
    };
    auto extra = body;
    extra.push_back(0);
    const std::vector<Case> cases{
        {"a byte past the end", play_buffer<wire::ServerPlay>(extra)},
        {"an unknown flag", with(0, {11 | 0x40})},
        {"masks without frames", with(0, {2}, 3)},
        {"33 frames", with(2, {33})},
        {"a present mask beyond the slots", with(6, {7})},
        {"a filled slot that is not present", with(6, {1})},
        {"a mask marker of 2", with(5, {2})},
        {"an absent slot with an input", with(5, {1, 1, 0, 0x03}, 4)},  // slot 1 keeps the base's 3 4
        {"a shift of 0 with its flag", with(0, {11 | 32, 10, 1, 4, 3, 0}, 5)},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      CHECK(decode(c.bytes, 2, held) == DecodeError::FieldOutOfRange);
    }
    // The same absent slot with its input XORed to zeros is what an honest server sends.
    CHECK(decode(with(5, {1, 1, 0, 0x01, 0x81, 3, 4}, 4), 2, held) == DecodeError::None);
  }

  TEST_CASE("a frame in which no input changed costs a few bytes beyond the headers") {
    // Eight players holding their keys: two new frames against the frame the client holds.
    InputFrame base;
    base.reset(999, 8, 2);
    base.present = slot_mask(8);
    for (std::size_t i = 0; i < base.inputs.size(); ++i) base.inputs[i] = static_cast<std::uint8_t>(i * 37 + 1);
    InputFrame a = base, b = base;
    a.tick = 1000;
    b.tick = 1001;
    const InputFrame* frames[2] = {&a, &b};
    const protocol::ServerPlayHeader h{.input_ack = 1003, .hash_ack = 999};
    const auto based = body_of<wire::ServerPlay>(protocol::server_play(frames, &base, h));
    const auto whole = body_of<wire::ServerPlay>(protocol::server_play(frames, nullptr, h));
    // flags, first tick (2 bytes), count, two acks: 6 bytes of header; 32 unchanged input bytes: 1.
    CHECK(based.size() == 7);
    // Without the base, the first frame's 16 input bytes travel once (as a literal run).
    CHECK(whole.size() == 6 + 1 + 16 + 1);
  }
}
