// Another "build" of the arena, for bisection's tests and benchmark: the arena's worlds, except
// that from tick parting_tick() on one value is nudged by one bit every tick, so it parts from
// the arena at a tick the caller knows.
#pragma once

#include <memory>

#include "lockstep/arena.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep::testing {

/// The tick from which the parting build differs.
inline Tick& parting_tick() {
  static Tick t = 0;
  return t;
}

class PartingArena final : public Simulation {
 public:
  explicit PartingArena(std::unique_ptr<Simulation> s) : s_(std::move(s)) {}
  Tick tick() const override { return s_->tick(); }
  void step(const InputFrame& f) override {
    s_->step(f);
    if (s_->tick() >= parting_tick()) s_->perturb(7);
  }
  std::uint32_t input_size() const override { return s_->input_size(); }
  void serialize(std::vector<std::uint8_t>& out) const override { s_->serialize(out); }
  bool deserialize(std::span<const std::uint8_t> b) override { return s_->deserialize(b); }
  std::uint64_t hash() const override { return s_->hash(); }
  std::uint32_t entity_count() const override { return s_->entity_count(); }
  std::uint64_t entity_hash(std::uint32_t e) const override { return s_->entity_hash(e); }
  std::vector<FieldValue> entity_fields(std::uint32_t e) const override { return s_->entity_fields(e); }
  std::vector<FieldValue> global_fields() const override { return s_->global_fields(); }
  std::unique_ptr<Simulation> clone() const override { return std::make_unique<PartingArena>(s_->clone()); }
  void assign(const Simulation& o) override { s_->assign(*dynamic_cast<const PartingArena&>(o).s_); }
  std::uint64_t fingerprint() const override { return s_->fingerprint() ^ 1; }
  void draw(const Simulation& p, float a, DrawList& out) const override {
    s_->draw(*dynamic_cast<const PartingArena&>(p).s_, a, out);
  }
  float width() const override { return s_->width(); }
  float height() const override { return s_->height(); }
  void perturb(std::uint64_t sel) override { s_->perturb(sel); }

 private:
  std::unique_ptr<Simulation> s_;
};

/// A WorldFactory / SimulationFactory of the parting build.
inline std::unique_ptr<Simulation> parting_arena(const WorldParams& w) {
  auto s = arena_module().create(w);
  return s ? std::make_unique<PartingArena>(std::move(s)) : nullptr;
}

}  // namespace lockstep::testing
