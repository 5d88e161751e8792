// A simulation that steps (and may hash) another through hooks: everything else is the inner
// one's. For tests that need another "build" of a world: one that parts at a known tick, one whose
// step is slow, one whose hash leaves something out.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "lockstep/simulation.hpp"

namespace lockstep::testing {

class HookedSimulation final : public Simulation {
 public:
  /// Steps `inner` by `f` (the hook must step it, before or after what it adds).
  using StepHook = std::function<void(Simulation& inner, const InputFrame& f)>;
  /// The hash of `inner` (empty: inner's own).
  using HashHook = std::function<std::uint64_t(const Simulation& inner)>;
  /// `fingerprint_xor`: 0 for the same world, anything else for a build that joins as another.
  HookedSimulation(std::unique_ptr<Simulation> inner, StepHook hook, std::uint64_t fingerprint_xor = 0, HashHook hash = {})
      : s_(std::move(inner)), hook_(std::move(hook)), xor_(fingerprint_xor), hash_(std::move(hash)) {}
  Tick tick() const override { return s_->tick(); }
  void step(const InputFrame& f) override { hook_(*s_, f); }
  std::uint32_t input_size() const override { return s_->input_size(); }
  void serialize(std::vector<std::uint8_t>& out) const override { s_->serialize(out); }
  bool deserialize(std::span<const std::uint8_t> b) override { return s_->deserialize(b); }
  std::uint64_t hash() const override { return hash_ ? hash_(*s_) : s_->hash(); }
  std::uint32_t entity_count() const override { return s_->entity_count(); }
  std::uint64_t entity_hash(std::uint32_t e) const override { return s_->entity_hash(e); }
  std::vector<FieldValue> entity_fields(std::uint32_t e) const override { return s_->entity_fields(e); }
  std::vector<FieldValue> global_fields() const override { return s_->global_fields(); }
  std::unique_ptr<Simulation> clone() const override {
    return std::make_unique<HookedSimulation>(s_->clone(), hook_, xor_, hash_);
  }
  void assign(const Simulation& o) override { s_->assign(*dynamic_cast<const HookedSimulation&>(o).s_); }
  std::uint64_t fingerprint() const override { return s_->fingerprint() ^ xor_; }
  void draw(const Simulation& p, float a, DrawList& out) const override {
    s_->draw(*dynamic_cast<const HookedSimulation&>(p).s_, a, out);
  }
  float width() const override { return s_->width(); }
  float height() const override { return s_->height(); }
  void perturb(std::uint64_t sel) override { s_->perturb(sel); }

 private:
  std::unique_ptr<Simulation> s_;
  StepHook hook_;
  std::uint64_t xor_;
  HashHook hash_;
};

}  // namespace lockstep::testing
