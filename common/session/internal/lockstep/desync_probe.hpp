// Localizing a desync across the network, one question at a time: the server asks the desynced
// peer about its state at the desync's tick, level by level (hashes of entity blocks, then the
// entities of the first differing block, then the fields of the first differing entity, or the
// global fields when no entity differs), and compares each answer with its own state of that
// tick. Both sides are pure: states in, questions and answers out; the sessions carry them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/wire/messages_generated.h"

namespace lockstep {

struct ProbeQuestion {
  Tick tick = 0;
  wire::ProbeLevel level = wire::ProbeLevel::Blocks;
  std::uint32_t first = 0, count = 0, block_size = 0;
};

struct ProbeAnswer {
  Tick tick = 0;
  wire::ProbeLevel level = wire::ProbeLevel::Blocks;
  std::uint32_t first = 0;
  bool available = false;                       ///< false: the peer no longer holds that tick
  std::vector<std::uint64_t> hashes, values;    ///< block or entity hashes; field bit patterns
};

/// The peer's side: answers `q` about `state`, its state at q.tick (nullptr: no longer held).
/// False when the question is out of range for the state; it goes unanswered.
bool answer_probe(const ProbeQuestion& q, const Simulation* state, ProbeAnswer* out);

/// Localizes a desync between two states of one tick held in one place, question by question as
/// the server's probe would: `reference` takes the server's part (report.server_fields), `own`
/// the peer's (report.client_fields). Relay mode's desynced peer runs it on the majority's state.
DesyncReport localize_locally(DesyncReport report, const Simulation& reference, const Simulation& own);

/// The server's side: one desync being localized.
class DesyncLocalizer {
 public:
  enum class Outcome {
    Ask,         ///< question() is the next question to send
    Done,        ///< report() is final (localized, or a note says why not)
    Unasked,     ///< the answer is not to the pending question: ignored
    OutOfRange,  ///< the answer names an entity the state does not have: ignored
  };

 private:
  bool active_ = false;
  DesyncReport report_;
  ProbeQuestion question_;
  std::int64_t started_at_ = 0;

 public:
  /// Begins with `report` (tick, peer and hashes set) and `ours`, the server's state at the
  /// tick (nullptr: no longer held, and the report is done at once).
  Outcome start(DesyncReport report, const Simulation* ours, std::int64_t now);
  /// Takes an answer (`bytes`: its size on the wire); `ours` as for start().
  Outcome answer(const ProbeAnswer& a, std::size_t bytes, const Simulation* ours);
  /// Ends it unlocalized: `note` says why (a timeout, the session's end).
  void give_up(const std::string& note);

  [[nodiscard]] bool active() const { return active_; }
  [[nodiscard]] const ProbeQuestion& question() const { return question_; }
  [[nodiscard]] std::int64_t started_at() const { return started_at_; }
  [[nodiscard]] const DesyncReport& report() const { return report_; }
  /// Counts the bytes of a question as it goes out.
  void count_sent(std::size_t bytes) { report_.probe_bytes += bytes; }

 private:
  Outcome ask(wire::ProbeLevel level, std::uint32_t first, std::uint32_t count);
  Outcome done(const std::string& note = "");
};

}  // namespace lockstep
