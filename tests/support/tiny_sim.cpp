#include "support/tiny_sim.hpp"

#include <cassert>
#include <cstring>

#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep::testing {
namespace {

class TinySim final : public Simulation {
 public:
  // Its settings: any bytes; their first byte (0 without any) offsets the walkers' start.
  explicit TinySim(const WorldParams& p) : pos_(p.players, 0.0f) {
    const std::uint8_t offset = p.settings.empty() ? 0 : p.settings[0];
    for (std::size_t i = 0; i < pos_.size(); ++i) pos_[i] = static_cast<float>(i) + static_cast<float>(offset % 7);
  }
  Tick tick() const override { return tick_; }
  std::uint32_t input_size() const override { return 2; }
  void step(const InputFrame& f) override {
    assert(f.tick == tick_ + 1);
    for (std::uint32_t i = 0; i < pos_.size() && i < f.players; ++i)
      pos_[i] += static_cast<float>(static_cast<std::int8_t>(f.input(i)[0])) * 0.01f;
    tick_ = f.tick;
  }
  void serialize(std::vector<std::uint8_t>& out) const override {
    ByteWriter w(out);
    w.u32(tick_);
    w.u32(static_cast<std::uint32_t>(pos_.size()));
    w.array(std::span<const float>(pos_));
  }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    ByteReader r(bytes);
    const Tick t = r.u32();
    const std::uint32_t n = r.u32();
    if (!r.ok() || n > kMaxPlayers || r.remaining() != n * 4u) return false;
    std::vector<float> pos(n);
    r.array(std::span<float>(pos));
    tick_ = t;
    pos_ = std::move(pos);
    return true;
  }
  std::uint64_t hash() const override {
    std::vector<std::uint8_t> b;
    serialize(b);
    return hash_bytes(b);
  }
  std::uint32_t entity_count() const override { return static_cast<std::uint32_t>(pos_.size()); }
  std::uint64_t entity_hash(std::uint32_t e) const override {
    return hash_bytes(std::span(reinterpret_cast<const std::uint8_t*>(&pos_[e]), 4));
  }
  std::vector<FieldValue> entity_fields(std::uint32_t e) const override {
    std::uint32_t bits;
    std::memcpy(&bits, &pos_[e], 4);
    return {{"pos", FieldValue::Kind::F32, bits}};
  }
  std::vector<FieldValue> global_fields() const override { return {{"tick", FieldValue::Kind::U32, tick_}}; }
  std::unique_ptr<Simulation> clone() const override { return std::make_unique<TinySim>(*this); }
  void assign(const Simulation& o) override { *this = dynamic_cast<const TinySim&>(o); }
  std::uint64_t fingerprint() const override { return 0x7417'5107; }
  void draw(const Simulation& previous, float alpha, DrawList& out) const override {
    const auto& p = dynamic_cast<const TinySim&>(previous);
    out.clear();
    for (std::size_t i = 0; i < pos_.size(); ++i)
      out.push_back(DrawShape::circle(p.pos_[i] + (pos_[i] - p.pos_[i]) * alpha, 1.0f, 0.5f, static_cast<std::int32_t>(i)));
  }
  float width() const override { return 100.0f; }
  float height() const override { return 2.0f; }
  void perturb(std::uint64_t selector) override {
    float& f = pos_[selector % pos_.size()];
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits ^= 1u;
    std::memcpy(&f, &bits, 4);
  }

 private:
  Tick tick_ = 0;
  std::vector<float> pos_;
};

}  // namespace

std::unique_ptr<Simulation> make_tiny_sim(const WorldParams& params) {
  if (params.players < 1 || params.players > kMaxPlayers) return nullptr;
  return std::make_unique<TinySim>(params);
}

}  // namespace lockstep::testing
