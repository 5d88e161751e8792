// The desync checks lockstep-synctest runs on a module, each naming the first tick it fails at
// (synctest.hpp).
#include "lockstep/synctest.hpp"

#include <cstdio>
#include <sstream>

#include "lockstep/desync.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/desync_probe.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {

CheckResult fail(const std::string& check, Tick tick, std::string detail) {
  CheckResult r;
  r.check = check;
  r.ok = false;
  r.tick = tick;
  r.detail = std::move(detail);
  return r;
}

CheckResult pass(const std::string& check, std::string detail) {
  CheckResult r;
  r.check = check;
  r.detail = std::move(detail);
  return r;
}

std::unique_ptr<Simulation> create(const SyncTestConfig& cfg) { return cfg.module->create(cfg.world); }

// The first differing byte of two serializations, or -1 when they are equal.
std::int64_t first_byte_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<std::int64_t>(i);
  return a.size() == b.size() ? -1 : static_cast<std::int64_t>(n);
}

// The first entity whose hash differs between two states, and the fields that differ there; when
// no declared field differs, the first byte at which the serializations do.
void name_difference(const Simulation& want, const Simulation& got, CheckResult* r) {
  const StateDifference d = locate_difference(want, got);
  if (d.where == "none") return;
  r->entity = d.entity;
  if (!d.a_fields.empty()) r->field = d.a_fields[0].name;
  else if (d.where == "outside fields") r->field = "bytes outside the declared fields";
  r->detail += "; " + difference_text(d);
}

std::string hex(std::uint64_t h) { return hash_hex(h); }

}  // namespace

Json result_json(const CheckResult& r) {
  Json j{{"check", r.check}, {"ok", r.ok}};
  if (!r.variant.empty()) j["variant"] = r.variant;
  if (r.tick != 0 || !r.ok) j["tick"] = r.tick;
  if (r.entity >= 0) j["entity"] = r.entity;
  if (!r.field.empty()) j["field"] = r.field;
  j["detail"] = r.detail;
  if (!r.bundle.empty()) j["bundle"] = r.bundle;
  if (!r.page.empty()) j["page"] = r.page;
  return j;
}

std::vector<std::uint32_t> default_player_counts(const Module& m, const WorldParams& world) {
  std::vector<std::uint32_t> out;
  for (const std::uint32_t n : {1u, 2u}) {
    WorldParams w = world;
    w.players = n;
    if (m.create(w)) out.push_back(n);
  }
  for (std::uint32_t n = std::min<std::uint32_t>(8, kMaxPlayers); n > 2; --n) {
    WorldParams w = world;
    w.players = n;
    if (m.create(w)) {
      out.push_back(n);
      break;
    }
  }
  return out;
}

std::vector<SyncTestConfig> synctest_variants(const SyncTestConfig& base, const std::vector<WorldChoice>& worlds,
                                              const std::vector<std::uint32_t>& players) {
  std::vector<SyncTestConfig> out;
  for (const WorldChoice& w : worlds)
    for (const std::uint32_t n : players) {
      SyncTestConfig c = base;
      c.world = w.world;
      c.world.players = n;
      if (!base.module->create(c.world)) continue;
      c.seed = base.seed + out.size();
      c.variant = "world=" + w.label + " players=" + std::to_string(n) + " seed=" + std::to_string(c.seed);
      out.push_back(std::move(c));
    }
  return out;
}

InputFrame synctest_frame(const SyncTestConfig& cfg, Tick t) {
  const Module& m = *cfg.module;
  InputFrame f;
  f.reset(t, cfg.world.players, m.input_size);
  PlayerTick in;
  for (std::uint32_t p = 0; p < cfg.world.players; ++p) {
    f.present |= 1u << p;
    Rng rng = Rng::seeded(cfg.seed * 0x9e3779b97f4a7c15ULL + p, t);
    in.input.assign(m.input_size, 0);
    in.commands.clear();
    m.bot(cfg.seed + p, t, &in);
    in.input.resize(m.input_size, 0);
    if (rng.below(2) == 0)
      for (auto& b : in.input) b = static_cast<std::uint8_t>(rng.next_u32());
    if (rng.below(16) == 0) {  // a random command: usually invalid, and it must do nothing alike everywhere
      std::vector<std::uint8_t> c(1 + rng.below(16));
      for (auto& b : c) b = static_cast<std::uint8_t>(rng.next_u32());
      in.commands.add(c);
    }
    std::copy(in.input.begin(), in.input.end(), f.input(p).begin());
    f.add_commands(p, in.commands);
  }
  return f;
}

bool run_trace(const SyncTestConfig& cfg, Trace* out, std::string* error) {
  auto sim = create(cfg);
  if (!sim) {
    *error = "the module cannot build this world";
    return false;
  }
  out->fingerprint = sim->fingerprint();
  out->initial = sim->hash();
  out->hashes.clear();
  for (Tick t = 1; t <= cfg.ticks; ++t) {
    sim->step(synctest_frame(cfg, t));
    out->hashes.push_back(sim->hash());
  }
  return true;
}

std::string trace_text(const Trace& t) {
  std::string s = "fingerprint " + hex(t.fingerprint) + "\ninitial " + hex(t.initial) + "\n";
  for (std::size_t i = 0; i < t.hashes.size(); ++i) s += format_hash_line(static_cast<Tick>(i + 1), t.hashes[i]) + "\n";
  return s;
}

bool parse_trace(const std::string& text, Trace* out) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line.rfind("fingerprint ", 0) != 0) return false;
  out->fingerprint = std::strtoull(line.c_str() + 12, nullptr, 16);
  if (!std::getline(in, line) || line.rfind("initial ", 0) != 0) return false;
  out->initial = std::strtoull(line.c_str() + 8, nullptr, 16);
  out->hashes.clear();
  while (std::getline(in, line)) {
    const auto th = parse_hash_line(line);
    if (!th || th->tick != out->hashes.size() + 1) return false;
    out->hashes.push_back(th->hash);
  }
  return true;
}

std::int64_t first_divergence(const Trace& a, const Trace& b) {
  if (a.initial != b.initial) return 0;
  const std::size_t n = std::min(a.hashes.size(), b.hashes.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a.hashes[i] != b.hashes[i]) return static_cast<std::int64_t>(i + 1);
  return a.hashes.size() == b.hashes.size() ? -1 : static_cast<std::int64_t>(n + 1);
}

namespace {

// A cross-process check: the first tick at which the traces differ, with `why` said of it.
CheckResult compare_traces(const std::string& check, const Trace& a, const Trace& b, const std::string& runs,
                           const std::string& why, const std::string& passed) {
  const std::int64_t t = first_divergence(a, b);
  if (t < 0) return pass(check, std::to_string(a.hashes.size()) + " ticks equal in " + passed);
  if (t > 0 && (static_cast<std::size_t>(t) > a.hashes.size() || static_cast<std::size_t>(t) > b.hashes.size()))
    return fail(check, static_cast<Tick>(t), "the runs have different lengths");
  const std::uint64_t x = t == 0 ? a.initial : a.hashes[static_cast<std::size_t>(t) - 1];
  const std::uint64_t y = t == 0 ? b.initial : b.hashes[static_cast<std::size_t>(t) - 1];
  return fail(check, static_cast<Tick>(t),
              std::string(t == 0 ? "the new worlds (tick 0) of " : "the same frames in ") + runs + " gave hashes " +
                  hex(x) + " and " + hex(y) + ": " + why);
}

}  // namespace

CheckResult check_replay(const Trace& a, const Trace& b) {
  return compare_traces("replay", a, b, "two processes",
                        "the step reads something besides its state and frame (an address, a clock, global state, "
                        "uninitialised memory)",
                        "two processes");
}

CheckResult check_memory(const Trace& a, const Trace& b) {
  return compare_traces("memory", a, b, "two processes whose fresh and freed heap memory held other bytes",
                        "the state holds memory it never wrote (a field left uninitialised, padding copied into the "
                        "serialization, an order taken from addresses)",
                        "two processes whose fresh and freed heap memory held other bytes");
}

bool run_state(const SyncTestConfig& cfg, Tick t, std::vector<std::uint8_t>* out, std::string* error) {
  auto sim = create(cfg);
  if (!sim) {
    *error = "the module cannot build this world";
    return false;
  }
  for (Tick i = 1; i <= t; ++i) sim->step(synctest_frame(cfg, i));  // t 0: the new world
  out->clear();
  sim->serialize(*out);
  return true;
}

void localize_states(const SyncTestConfig& cfg, const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                     CheckResult* r) {
  auto x = create(cfg), y = create(cfg);
  if (!x || !y || !x->deserialize(a) || !y->deserialize(b)) {
    const std::int64_t at = first_byte_difference(a, b);
    r->detail += "; the states do not load" + std::string(at >= 0 ? ", they differ from byte offset " + std::to_string(at) : "");
    return;
  }
  // Loaded states hold only what the serialization carries: a difference there is in a declared
  // field or in bytes no field names.
  std::vector<std::uint8_t> xa, yb;
  x->serialize(xa);
  y->serialize(yb);
  if (xa != a || yb != b) {
    // Loading changed the bytes (padding normalized, say): compare what was sent.
    const std::int64_t at = first_byte_difference(a, b);
    CheckResult named = *r;
    name_difference(*x, *y, &named);
    if (!named.field.empty() && named.field != "bytes outside the declared fields") {
      *r = named;
      return;
    }
    r->field = "bytes outside the declared fields";
    r->detail += "; no declared field differs: bytes outside the declared fields (padding, or state no field names) "
                 "differ from byte offset " + std::to_string(at) + " of " + std::to_string(a.size());
    return;
  }
  name_difference(*x, *y, r);
}

CheckResult check_rollback(const SyncTestConfig& cfg) {
  // GGPO's SyncTest: save, step k ticks, load, step them again. The save is a clone and the load
  // an assign, the host's own way of holding a past state, so this check sees only a step that
  // depends on something outside the state (a cache, a static, history); whether serialization
  // keeps everything is the round trip's to say. The first pass's states are kept as bytes, so a
  // failure at any of the k ticks names the entity and field.
  auto sim = create(cfg);
  std::vector<std::uint64_t> ahead;
  const Tick k = std::max<Tick>(1, cfg.rollback);
  std::vector<std::vector<std::uint8_t>> ahead_bytes(k);
  for (Tick t = 0; t + k <= cfg.ticks; ++t) {
    const auto saved = sim->clone();
    ahead.clear();
    for (Tick i = 1; i <= k; ++i) {
      sim->step(synctest_frame(cfg, t + i));
      ahead.push_back(sim->hash());
      ahead_bytes[i - 1].clear();
      sim->serialize(ahead_bytes[i - 1]);
    }
    sim->assign(*saved);
    for (Tick i = 1; i <= k; ++i) {
      sim->step(synctest_frame(cfg, t + i));
      if (sim->hash() == ahead[i - 1]) continue;
      CheckResult r = fail("rollback", t + i,
                           "saved at tick " + std::to_string(t) + ", stepped " + std::to_string(i) +
                               " ticks, loaded and stepped again: hashes " + hex(ahead[i - 1]) + " then " +
                               hex(sim->hash()) + " (a step that reads something outside the state: a cache, a "
                               "static, its own history)");
      auto first_pass = create(cfg);
      if (first_pass && first_pass->deserialize(ahead_bytes[i - 1])) name_difference(*first_pass, *sim, &r);
      // The two passes over the ticks since the save, for the bundle (the second agreed until this one).
      CheckResult::Side before{"first pass (saved at tick " + std::to_string(t) + ")", {}, ahead_bytes[i - 1]};
      CheckResult::Side after{"after the load", {}, {}};
      for (Tick j = 1; j <= i; ++j) {
        before.hashes.emplace_back(t + j, ahead[j - 1]);
        after.hashes.emplace_back(t + j, j < i ? ahead[j - 1] : sim->hash());
      }
      sim->serialize(after.state);
      r.sides = {std::move(before), std::move(after)};
      return r;
    }
    // Back to tick t + 1 for the next round.
    sim->assign(*saved);
    sim->step(synctest_frame(cfg, t + 1));
  }
  return pass("rollback", "saved, stepped " + std::to_string(k) + ", loaded and stepped again at every tick of " +
                              std::to_string(cfg.ticks));
}

std::vector<Tick> history_points(const SyncTestConfig& cfg) {
  // Loads early (before anything has touched), at a quarter, half and three quarters of the run;
  // each load's k ticks stay within the run (a run shorter than k + 1 ticks loads at tick 1 alone).
  std::vector<Tick> out;
  const Tick k = std::max<Tick>(1, cfg.history);
  for (const Tick t : {Tick{1}, cfg.ticks / 4, cfg.ticks / 2, cfg.ticks / 4 * 3})
    if (t >= 1 && t + k <= cfg.ticks && (out.empty() || t >= out.back() + k)) out.push_back(t);
  if (out.empty()) out.push_back(1);
  return out;
}

CheckResult check_history(const SyncTestConfig& cfg) {
  // The world that ran from tick 0 is never copied: it keeps whatever it has built up beside its
  // state. A fresh world loaded from its bytes must step the same.
  auto sim = create(cfg);
  const Tick k = std::max<Tick>(1, cfg.history);
  const std::vector<Tick> points = history_points(cfg);
  Tick at = 0;
  std::vector<std::uint8_t> bytes;
  for (const Tick t : points) {
    for (; at < t; ++at) sim->step(synctest_frame(cfg, at + 1));
    bytes.clear();
    sim->serialize(bytes);
    auto loaded = create(cfg);
    if (!loaded->deserialize(bytes)) return fail("history", t, "the serialized state does not load into a new world");
    CheckResult::Side ran{"ran from tick 0", {}, {}}, fresh{"loaded from tick " + std::to_string(t), {}, {}};
    for (Tick i = 1; i <= k; ++i, ++at) {
      const InputFrame frame = synctest_frame(cfg, at + 1);
      sim->step(frame);
      loaded->step(frame);
      ran.hashes.emplace_back(at + 1, sim->hash());
      fresh.hashes.emplace_back(at + 1, loaded->hash());
      if (sim->hash() == loaded->hash()) continue;
      CheckResult r = fail("history", at + 1,
                           "a world loaded from the bytes of tick " + std::to_string(t) + " and the world that ran "
                           "from tick 0 part after " + std::to_string(i) + " ticks: hashes " + hex(sim->hash()) +
                           " (with history) and " + hex(loaded->hash()) + " (loaded): the step reads state the "
                           "serialization leaves out (a physics engine's contact cache or warm-starting impulses, "
                           "contact order, sleep timers, a centre of mass; docs/GUIDE.md, physics engines)");
      name_difference(*sim, *loaded, &r);
      sim->serialize(ran.state);
      loaded->serialize(fresh.state);
      r.sides = {std::move(ran), std::move(fresh)};
      return r;
    }
  }
  std::string where;
  for (const Tick t : points) where += (where.empty() ? "" : ", ") + std::to_string(t);
  return pass("history", "worlds loaded from the bytes of ticks " + where + " stepped " + std::to_string(k) +
                             " ticks as the world that ran from tick 0 did");
}

std::vector<CheckResult> check_state_copies(const SyncTestConfig& cfg) {
  std::vector<CheckResult> out;
  auto sim = create(cfg);
  CheckResult roundtrip = pass("roundtrip", ""), clone = pass("clone", ""), assign = pass("assign", ""),
              hash = pass("hash", "");
  std::vector<std::uint8_t> bytes, again;
  const Tick every = std::max<Tick>(1, cfg.ticks / 20);
  for (Tick t = 1; t <= cfg.ticks; ++t) {
    sim->step(synctest_frame(cfg, t));
    if (t % every != 0) continue;
    const InputFrame next = synctest_frame(cfg, t + 1);
    bytes.clear();
    sim->serialize(bytes);
    if (hash.ok && sim->hash() != hash_bytes(bytes))
      hash = fail("hash", t, "hash() " + hex(sim->hash()) + " is not XXH3-64 of the serialized bytes (" +
                                 hex(hash_bytes(bytes)) + ")");
    if (roundtrip.ok) {
      auto loaded = create(cfg);
      again.clear();
      if (!loaded->deserialize(bytes)) {
        roundtrip = fail("roundtrip", t, "the serialized state does not load into a new world");
      } else {
        loaded->serialize(again);
        if (again != bytes || loaded->hash() != sim->hash()) {
          roundtrip = fail("roundtrip", t, "serialize, deserialize, serialize gives other bytes");
          name_difference(*sim, *loaded, &roundtrip);
        } else {
          auto a = sim->clone();
          a->step(next);
          loaded->step(next);
          if (a->hash() != loaded->hash()) {
            roundtrip = fail("roundtrip", t + 1, "a loaded state steps differently from the original: the "
                                                 "serialization leaves out state the step reads");
            name_difference(*a, *loaded, &roundtrip);
          }
        }
      }
    }
    if (clone.ok) {
      auto c = sim->clone();
      auto a = sim->clone();
      a->step(next);
      c->step(next);
      auto d = sim->clone();
      if (d->hash() != sim->hash() || a->hash() != c->hash()) {
        clone = fail("clone", t, "a clone differs from its original, or steps differently");
        name_difference(*a, *c, &clone);
      }
    }
    if (assign.ok) {
      auto target = create(cfg);
      target->assign(*sim);
      auto a = sim->clone();
      if (target->hash() != sim->hash()) {
        assign = fail("assign", t, "a world assigned from another has another hash");
      } else {
        a->step(next);
        target->step(next);
        if (a->hash() != target->hash()) {
          assign = fail("assign", t + 1, "a world assigned from another steps differently");
          name_difference(*a, *target, &assign);
        }
      }
    }
  }
  for (CheckResult* r : {&roundtrip, &clone, &assign, &hash})
    if (r->ok) r->detail = "checked every " + std::to_string(every) + " ticks";
  out = {roundtrip, clone, assign, hash};
  return out;
}

CheckResult check_localization(const SyncTestConfig& cfg) {
  auto sim = create(cfg);
  for (Tick t = 1; t <= cfg.ticks; ++t) sim->step(synctest_frame(cfg, t));
  const std::uint32_t n = sim->entity_count();
  if (n == 0) return pass("localization", "no entities");
  const auto fields = static_cast<std::uint32_t>(sim->entity_fields(0).size());
  // Selectors 0 .. sample x fields - 1 and as many seeded ones: by the Simulation contract each
  // flips one bit of one stored value.
  Rng rng = Rng::seeded(cfg.seed, 0x6c6f63);
  std::vector<std::uint64_t> selectors;
  const std::uint64_t count = std::uint64_t{std::max<std::uint32_t>(1, cfg.sample)} * std::max<std::uint32_t>(1, fields);
  for (std::uint64_t s = 0; s < count; ++s) selectors.push_back(s * 7919);
  for (std::uint64_t s = 0; s < count; ++s) selectors.push_back(std::uint64_t{rng.next_u32()} << 16 | rng.next_u32());
  std::size_t named = 0;
  for (const std::uint64_t s : selectors) {
    auto b = sim->clone();
    b->perturb(s);
    if (b->hash() == sim->hash())
      return fail("localization", sim->tick(), "perturb(" + std::to_string(s) + ") changed nothing the hash covers");
    DesyncReport base;
    base.tick = sim->tick();
    DesyncLocalizer loc;
    auto outcome = loc.start(base, sim.get(), 0);
    ProbeAnswer ans;
    while (outcome == DesyncLocalizer::Outcome::Ask) {
      if (!answer_probe(loc.question(), b.get(), &ans)) break;
      outcome = loc.answer(ans, 0, sim.get());
    }
    const DesyncReport& r = loc.report();
    CheckResult bad = fail("localization", sim->tick(), "");
    name_difference(*sim, *b, &bad);
    if (r.server_fields.empty()) {
      bad.detail = "perturb(" + std::to_string(s) + ") changed the hash, but no entity's or global field differs: "
                   "the entity hashes or fields leave out state the hash covers";
      return bad;
    }
    if (r.where == "entity" && (r.entity != bad.entity || r.server_fields[0].name != bad.field)) {
      bad.detail = "the probe named entity " + std::to_string(r.entity) + " field " + r.server_fields[0].name +
                   " where the states differ elsewhere";
      return bad;
    }
    ++named;
  }
  return pass("localization", std::to_string(named) + " one-bit perturbations each found and named (" +
                                  std::to_string(fields) + " fields per entity, " + std::to_string(n) + " entities)");
}

CheckResult check_fingerprint(std::uint64_t ours, std::uint64_t other, std::uint64_t changed) {
  if (ours != other)
    return fail("fingerprint", 0, "the fingerprint is " + hex(ours) + " here and " + hex(other) +
                                      " in another process: it must depend on the code and settings only");
  if (changed != 0 && changed == ours)
    return fail("fingerprint", 0, "a changed world setting leaves the fingerprint " + hex(ours) +
                                      ": peers with different worlds would be let in");
  return pass("fingerprint", hex(ours) + " in both processes" +
                                 std::string(changed != 0 ? ", another with a changed setting" : ""));
}

}  // namespace lockstep
