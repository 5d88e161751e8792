// Localizing a desync across the network, one question at a time, both sides (desync_probe.hpp).
#include "lockstep/desync_probe.hpp"

#include "lockstep/protocol.hpp"

namespace lockstep {

bool answer_probe(const ProbeQuestion& q, const Simulation* state, ProbeAnswer* out) {
  *out = ProbeAnswer{};
  out->tick = q.tick;
  out->level = q.level;
  out->first = q.first;
  out->available = state != nullptr;
  if (!state) return true;
  switch (q.level) {
    case wire::ProbeLevel::Blocks:
      if (q.block_size == 0 || state->entity_count() / q.block_size >= protocol::kMaxProbeHashes) return false;
      out->hashes = block_hashes(*state, q.block_size);
      return true;
    case wire::ProbeLevel::Entities: out->hashes = entity_hashes(*state, q.first, q.count); return true;
    case wire::ProbeLevel::Fields:
      if (q.first >= state->entity_count()) return false;
      out->values = field_bits(state->entity_fields(q.first));
      return true;
    case wire::ProbeLevel::Global: out->values = field_bits(state->global_fields()); return true;
  }
  return false;
}

DesyncLocalizer::Outcome DesyncLocalizer::start(DesyncReport report, const Simulation* ours, std::int64_t now) {
  report_ = std::move(report);
  active_ = true;
  started_at_ = now;
  if (!ours) return done("the server no longer holds tick " + std::to_string(report_.tick));
  std::vector<std::uint8_t> state;
  ours->serialize(state);
  report_.state_bytes = state.size();
  question_ = ProbeQuestion{report_.tick, wire::ProbeLevel::Blocks, 0, 0, probe_block_size(ours->entity_count())};
  return Outcome::Ask;
}

DesyncLocalizer::Outcome DesyncLocalizer::answer(const ProbeAnswer& a, std::size_t bytes, const Simulation* ours) {
  if (!active_ || a.tick != report_.tick || a.level != question_.level) return Outcome::Unasked;
  report_.probe_bytes += bytes;
  if (!a.available) return done("the client no longer holds tick " + std::to_string(report_.tick));
  if (!ours) return done("the server no longer holds tick " + std::to_string(report_.tick));
  const std::uint32_t block = question_.block_size;
  switch (a.level) {
    case wire::ProbeLevel::Blocks: {
      const std::int64_t b = first_difference(block_hashes(*ours, block), a.hashes);
      if (b < 0) return ask(wire::ProbeLevel::Global, 0, 0);
      return ask(wire::ProbeLevel::Entities, static_cast<std::uint32_t>(b) * block, block);
    }
    case wire::ProbeLevel::Entities: {
      const std::vector<std::uint64_t> mine = entity_hashes(*ours, a.first, block);
      const std::int64_t e = first_difference(mine, a.hashes);
      if (e < 0) return ask(wire::ProbeLevel::Global, 0, 0);
      // One side holds entities the other does not: entities were created or destroyed apart.
      if (static_cast<std::size_t>(e) >= mine.size() || static_cast<std::size_t>(e) >= a.hashes.size()) {
        report_.where = "entity count";
        report_.entity = a.first + e;
        return done(std::string(static_cast<std::size_t>(e) >= mine.size() ? "the client" : "the server") +
                    " holds entity " + std::to_string(a.first + e) + " and the other does not: an entity was created "
                    "or destroyed on one side only");
      }
      return ask(wire::ProbeLevel::Fields, a.first + static_cast<std::uint32_t>(e), 1);
    }
    case wire::ProbeLevel::Fields:
    case wire::ProbeLevel::Global: {
      const bool global = a.level == wire::ProbeLevel::Global;
      if (!global && a.first >= ours->entity_count()) return Outcome::OutOfRange;
      const std::vector<FieldValue> fields = global ? ours->global_fields() : ours->entity_fields(a.first);
      report_.where = global ? "global" : "entity";
      report_.entity = global ? -1 : static_cast<std::int64_t>(a.first);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        const std::uint64_t bits = i < a.values.size() ? a.values[i] : 0;
        if (bits == fields[i].bits) continue;
        report_.server_fields.push_back(fields[i]);
        FieldValue theirs = fields[i];
        theirs.bits = bits;
        report_.client_fields.push_back(theirs);
      }
      if (!report_.server_fields.empty()) return done();
      report_.where = "outside fields";
      return done(std::string(global ? "the states' hashes differ" : "entity " + std::to_string(a.first) + "'s hash differs") +
                  " but no declared field does: bytes outside the declared fields differ (padding copied into the "
                  "serialization, or state no field names); lockstep-synctest's memory and localization checks name "
                  "the byte offset");
    }
  }
  return Outcome::Unasked;
}

DesyncReport localize_locally(DesyncReport report, const Simulation& reference, const Simulation& own) {
  DesyncLocalizer loc;
  const Tick t = report.tick;
  auto outcome = loc.start(std::move(report), &reference, 0);
  // Each question narrows the difference down: blocks, entities, fields; a handful in all.
  for (int asked = 0; outcome == DesyncLocalizer::Outcome::Ask && asked < 16; ++asked) {
    ProbeAnswer a;
    if (!answer_probe(loc.question(), &own, &a)) break;
    outcome = loc.answer(a, 0, &reference);
  }
  if (outcome != DesyncLocalizer::Outcome::Done) loc.give_up("the states could not be compared at tick " + std::to_string(t));
  return loc.report();
}

void DesyncLocalizer::give_up(const std::string& note) {
  if (active_) done(note);
}

DesyncLocalizer::Outcome DesyncLocalizer::ask(wire::ProbeLevel level, std::uint32_t first, std::uint32_t count) {
  question_.level = level;
  question_.first = first;
  question_.count = count;
  return Outcome::Ask;
}

DesyncLocalizer::Outcome DesyncLocalizer::done(const std::string& note) {
  active_ = false;
  if (!note.empty()) report_.note = note;
  return Outcome::Done;
}

}  // namespace lockstep
