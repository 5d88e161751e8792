// A game that owns its state (mode b, lockstep_session.h) as a Simulation: every instance the
// session holds (current, previous, history, snapshots, the predicted world) is the game's saved
// bytes; stepping one loads it into the game first when the game holds another, so the game's own
// state is always the one last stepped. With prediction, a step already taken from the same state
// by the same frame is not taken again (GGPO's saved frames).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/lockstep_session.h"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

// What the instances of one game share: the callbacks, which instance the game's state holds,
// and the first callback failure (the session ends with it).
struct GameContext {
  lockstep_game game{};
  std::uint64_t code = 0;          // the identity part of the fingerprint
  // Each distinct state an instance holds has a version (a copy of the instance keeps it): the
  // game's own state is the one of holder_version.
  std::uint64_t holder_version = 0;
  std::uint64_t next_version = 1;
  std::string failure;
  std::string reason;  // a binding's word on why its callback failed (lockstep_client_callback_failed)
  void fail(const std::string& why) {
    if (failure.empty()) failure = reason.empty() ? why : why + ": " + reason;
  }
  // With prediction: the steps taken ahead of the confirmed tick, by tick (GGPO's saved frames).
  // A world stepping tick T from a state with the same hash and size, by the same frame, takes the
  // saved result instead of calling the game: the confirmed world follows a right prediction
  // without a callback. A later step of the same tick (a re-simulation) replaces the entry.
  struct Stepped {
    std::uint64_t from_hash = 0;
    std::size_t from_size = 0;
    InputFrame frame;
    std::vector<std::uint8_t> bytes;
  };
  bool keep_steps = false;
  std::map<Tick, Stepped> stepped;
  // reused: steps of the confirmed world that took a predicted step's save; a re-simulation of the
  // predicted world (GameSimulation::mark_predicted) taking one is not counted.
  std::uint64_t steps = 0, saves = 0, loads = 0, reused = 0;
  // Forgets the steps up to `tick` (confirmed: never taken again).
  void confirmed(Tick tick) { stepped.erase(stepped.begin(), stepped.upper_bound(tick)); }
};

class GameSimulation final : public Simulation {
 public:
  GameSimulation(std::shared_ptr<GameContext> ctx, std::vector<std::uint8_t> bytes, std::uint32_t players,
                 std::uint64_t fingerprint)
      : ctx_(std::move(ctx)), bytes_(std::move(bytes)), players_(players), fingerprint_(fingerprint) {
    version_ = ctx_->next_version++;
    tick_ = read_tick(bytes_);
  }

  // The game's state, saved; false (and the context told) when the game fails to.
  static bool save(GameContext& ctx, std::vector<std::uint8_t>* out) {
    const lockstep_game& g = ctx.game;
    ++ctx.saves;
    const std::size_t n = g.save(g.user, nullptr, 0);
    out->assign(n, 0);
    if (n == 0 || g.save(g.user, out->data(), n) != n) {
      ctx.fail("the game's save() wrote no state, or another length than it said");
      return false;
    }
    return true;
  }

  // This instance is the predicted world (the C API marks it after each update).
  void mark_predicted() const { predicted_world_ = true; }
  // The game holds this instance from now on.
  void mark_held() { ctx_->holder_version = version_; }
  [[nodiscard]] bool holds_me() const { return ctx_->holder_version == version_; }

  Tick tick() const override { return tick_; }
  void step(const InputFrame& frame) override {
    const lockstep_game& g = ctx_->game;
    if (!ctx_->failure.empty()) return;
    const std::uint64_t from = hash();
    const std::size_t from_size = bytes_.size();
    if (const auto it = ctx_->stepped.find(frame.tick); it != ctx_->stepped.end() && it->second.from_hash == from &&
                                                         it->second.from_size == bytes_.size() && it->second.frame == frame) {
      bytes_ = it->second.bytes;  // stepped before, from this state by this frame: the same bytes
      tick_ = frame.tick;
      version_ = ctx_->next_version++;
      if (!predicted_world_) ++ctx_->reused;
      return;
    }
    if (!holds_me()) {
      ++ctx_->loads;
      if (g.load(g.user, bytes_.data(), bytes_.size()) != 0) return ctx_->fail("the game's load() refused a state it saved");
    }
    const lockstep_frame f = c_frame(frame, &commands_);
    ++ctx_->steps;
    if (g.step(g.user, &f) != 0) return ctx_->fail("the game's step() failed at tick " + std::to_string(frame.tick));
    std::vector<std::uint8_t> next;
    if (!save(*ctx_, &next)) return;
    if (read_tick(next) != frame.tick)
      return ctx_->fail("the game's state is at tick " + std::to_string(read_tick(next)) + " after stepping tick " +
                        std::to_string(frame.tick));
    bytes_ = std::move(next);
    tick_ = frame.tick;
    version_ = ctx_->next_version++;
    mark_held();
    if (ctx_->keep_steps) ctx_->stepped[frame.tick] = {from, from_size, frame, bytes_};
  }
  // Makes the game's state this instance's bytes (loading them if it holds another).
  void hold() const {
    if (holds_me() || !ctx_->failure.empty()) return;
    ++ctx_->loads;
    if (ctx_->game.load(ctx_->game.user, bytes_.data(), bytes_.size()) != 0)
      return ctx_->fail("the game's load() refused a state it saved");
    ctx_->holder_version = version_;
  }
  std::uint32_t input_size() const override { return ctx_->game.input_size; }
  void serialize(std::vector<std::uint8_t>& out) const override { out.insert(out.end(), bytes_.begin(), bytes_.end()); }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    // Untrusted bytes (a snapshot): the game loads them, and what it saves back is the state.
    const lockstep_game& g = ctx_->game;
    if (bytes.empty() || g.load(g.user, bytes.data(), bytes.size()) != 0) return false;
    std::vector<std::uint8_t> saved;
    if (!save(*ctx_, &saved)) return false;
    bytes_ = std::move(saved);
    tick_ = read_tick(bytes_);
    version_ = ctx_->next_version++;
    mark_held();
    return true;
  }
  std::uint64_t hash() const override {
    if (hashed_version_ != version_) {
      hash_ = hash_bytes(bytes_);
      hashed_version_ = version_;
    }
    return hash_;
  }
  std::uint32_t entity_count() const override {
    return ctx_->game.entity_count ? ctx_->game.entity_count(ctx_->game.user, bytes_.data(), bytes_.size()) : 0;
  }
  std::uint64_t entity_hash(std::uint32_t entity) const override { return fields_hash(entity_fields(entity)); }
  std::vector<FieldValue> entity_fields(std::uint32_t entity) const override { return fields(entity); }
  std::vector<FieldValue> global_fields() const override { return fields(UINT32_MAX); }
  std::unique_ptr<Simulation> clone() const override {
    auto c = std::make_unique<GameSimulation>(ctx_, bytes_, players_, fingerprint_);
    c->assign(*this);
    return c;
  }
  void assign(const Simulation& other) override {
    const auto& o = dynamic_cast<const GameSimulation&>(other);
    bytes_ = o.bytes_;
    tick_ = o.tick_;
    players_ = o.players_;
    fingerprint_ = o.fingerprint_;
    version_ = o.version_;  // the same state: if the game holds it, stepping this copy needs no load
    hash_ = o.hash_;
    hashed_version_ = o.hashed_version_;
  }
  std::uint64_t fingerprint() const override { return fingerprint_; }
  void draw(const Simulation&, float, DrawList& out) const override { out.clear(); }  // the game draws its own
  float width() const override { return 1; }
  float height() const override { return 1; }
  void perturb(std::uint64_t selector) override {
    // A test hook: one bit of the saved state; the next step loads it into the game.
    if (bytes_.empty()) return;
    bytes_[selector % bytes_.size()] ^= 1;
    version_ = ctx_->next_version++;
  }

 private:
  Tick read_tick(const std::vector<std::uint8_t>& b) const {
    return b.empty() ? 0 : ctx_->game.tick(ctx_->game.user, b.data(), b.size());
  }
  std::vector<FieldValue> fields(std::uint32_t entity) const {
    const lockstep_game& g = ctx_->game;
    if (!g.fields) return {};
    std::vector<lockstep_field> raw(g.fields(g.user, bytes_.data(), bytes_.size(), entity, nullptr, 0));
    raw.resize(std::min(raw.size(), g.fields(g.user, bytes_.data(), bytes_.size(), entity, raw.data(), raw.size())));
    return field_values(raw);
  }

  std::shared_ptr<GameContext> ctx_;
  std::vector<std::uint8_t> bytes_;
  std::uint32_t players_ = 0;
  std::uint64_t fingerprint_ = 0;
  std::uint64_t version_ = 0;
  mutable std::uint64_t hash_ = 0, hashed_version_ = 0;  // hash() of bytes_ at version hashed_version_
  Tick tick_ = 0;
  mutable bool predicted_world_ = false;  // a role, not a state: not copied by assign()
  std::vector<lockstep_command> commands_;
};

// The session's factory for a game that owns its state: the game resets to the world and its
// saved tick 0 is the world.
inline WorldFactory game_factory(const std::shared_ptr<GameContext>& ctx) {
  return [ctx](const WorldParams& world) -> std::unique_ptr<Simulation> {
    const lockstep_game& g = ctx->game;
    if (const int r = g.reset(g.user, world.settings.data(), world.settings.size(), world.players); r != 0) {
      ctx->fail("the game's reset() returned " + std::to_string(r) + " for " + std::to_string(world.players) +
                " players and " + std::to_string(world.settings.size()) + " bytes of settings");
      return nullptr;
    }
    std::vector<std::uint8_t> bytes;
    if (!GameSimulation::save(*ctx, &bytes)) return nullptr;
    auto sim = std::make_unique<GameSimulation>(ctx, std::move(bytes), world.players,
                                                world_fingerprint(ctx->code, world.settings));
    sim->mark_held();
    return sim;
  };
}

}  // namespace lockstep
