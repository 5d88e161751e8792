// The skirmish as a Simulation: serialization, hashes, desync fields and drawing over the rules.
#include <algorithm>
#include <string>

#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"
#include "rules.hpp"

namespace lockstep {

namespace {

using namespace skirmish_rules;

// ---- the Simulation ----

constexpr std::size_t kStateHeaderBytes = 4 + 4 + 20 + 4;

void write_state(const SkirmishState& s, std::vector<std::uint8_t>& out) {
  out.reserve(out.size() + kStateHeaderBytes + std::size_t{s.count()} * kFields * 4);
  ByteWriter w(out);
  w.u32(s.tick);
  w.u32(s.players);
  const auto settings = encode_skirmish_settings(s.settings);
  w.raw(settings.data(), settings.size());
  w.u32(s.count());
  for (const auto* v : {&s.x, &s.y, &s.vx, &s.vy, &s.tx, &s.ty, &s.hp}) w.array(std::span<const std::int32_t>(*v));
  for (const auto* v : {&s.target, &s.cooldown, &s.order, &s.owner, &s.selected})
    w.array(std::span<const std::uint32_t>(*v));
}

class SkirmishSimulation final : public Simulation {
 public:
  SkirmishSimulation(const SkirmishSettings& settings, std::uint32_t players) : rocks_(make_rocks(settings, players)) {
    init(settings, players, rocks_, s_);
  }
  SkirmishSimulation(const SkirmishSimulation& o) : s_(o.s_), rocks_(o.rocks_) {}

  Tick tick() const override { return s_.tick; }
  void step(const InputFrame& frame) override { skirmish_step(s_, rocks_, frame, scratch_); }
  std::uint32_t input_size() const override { return 0; }

  void serialize(std::vector<std::uint8_t>& out) const override { write_state(s_, out); }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    ByteReader r(bytes);
    SkirmishState n;
    n.tick = r.u32();
    n.players = r.u32();
    std::array<std::uint8_t, 20> settings{};
    r.raw(settings.data(), settings.size());
    const std::uint32_t count = r.u32();
    if (!r.ok() || !decode_skirmish_settings(settings, &n.settings) || n.players < 1 ||
        n.players > static_cast<std::uint32_t>(kMaxPlayers) || count != n.players * n.settings.units ||
        count > kSkirmishMaxUnits || r.remaining() != std::size_t{count} * kFields * 4)
      return false;
    n.resize(count);
    for (auto* v : {&n.x, &n.y, &n.vx, &n.vy, &n.tx, &n.ty, &n.hp}) r.array(std::span<std::int32_t>(*v));
    for (auto* v : {&n.target, &n.cooldown, &n.order, &n.owner, &n.selected}) r.array(std::span<std::uint32_t>(*v));
    // What stepping and drawing index by must be in range; any other value is a state the step
    // handles (a state that diverged by one bit must still load, to be localized).
    const Fixed side = n.side();
    for (std::uint32_t u = 0; u < count; ++u)
      if (n.x[u] < 0 || n.x[u] >= side || n.y[u] < 0 || n.y[u] >= side ||
          n.owner[u] >= static_cast<std::uint32_t>(kMaxPlayers))
        return false;
    if (n.settings.seed != s_.settings.seed || n.settings.map != s_.settings.map ||
        n.settings.rocks != s_.settings.rocks || n.settings.units != s_.settings.units || n.players != s_.players)
      rocks_ = make_rocks(n.settings, n.players);
    s_ = std::move(n);
    return true;
  }
  std::uint64_t hash() const override {
    scratch_bytes_.clear();
    write_state(s_, scratch_bytes_);
    return hash_bytes(scratch_bytes_);
  }

  std::uint32_t entity_count() const override { return s_.count(); }
  std::uint64_t entity_hash(std::uint32_t e) const override {
    std::array<std::uint32_t, kFields> bits{};
    for (std::uint32_t k = 0; k < kFields; ++k) bits[k] = s_.field(e, k);
    return hash_bytes({reinterpret_cast<const std::uint8_t*>(bits.data()), sizeof bits});
  }
  std::vector<FieldValue> entity_fields(std::uint32_t e) const override {
    std::vector<FieldValue> out;
    for (std::uint32_t k = 0; k < kFields; ++k) out.push_back({kFieldNames[k], FieldValue::Kind::U32, s_.field(e, k)});
    return out;
  }
  std::vector<FieldValue> global_fields() const override {
    return {{"tick", FieldValue::Kind::U32, s_.tick},
            {"players", FieldValue::Kind::U32, s_.players},
            {"seed", FieldValue::Kind::U64, s_.settings.seed},
            {"map", FieldValue::Kind::U32, s_.settings.map}};
  }

  std::unique_ptr<Simulation> clone() const override { return std::make_unique<SkirmishSimulation>(*this); }
  void assign(const Simulation& other) override {
    const auto& o = dynamic_cast<const SkirmishSimulation&>(other);
    s_ = o.s_;  // vectors reuse their storage
    if (rocks_.side != o.rocks_.side || rocks_.cell != o.rocks_.cell) rocks_ = o.rocks_;
  }

  std::uint64_t fingerprint() const override {
    return world_fingerprint(code_fingerprint(), encode_skirmish_settings(s_.settings));
  }
  static std::uint64_t code_fingerprint() {
    static const std::uint64_t fp = [] {
      std::vector<std::uint8_t> id{'s', 'k', 'i', 'r', 'm', 'i', 's', 'h'};
      ByteWriter w(id);
      w.u32(skirmish_module().version);
      w.raw(&kC, sizeof kC);
      w.raw(kBases.data(), sizeof kBases);
      return hash_bytes(id);
    }();
    return fp;
  }

  void draw(const Simulation& previous, float alpha, DrawList& out) const override {
    const auto& prev = dynamic_cast<const SkirmishSimulation&>(previous).s_;
    out.clear();
    constexpr float kUnit = 1.0f / static_cast<float>(kFixedOne);
    // Rock, as runs of cells along each row.
    for (std::uint32_t y = 0; y < rocks_.side; ++y)
      for (std::uint32_t x = 0; x < rocks_.side;) {
        if (!rocks_.cell[std::size_t{y} * rocks_.side + x]) {
          ++x;
          continue;
        }
        std::uint32_t end = x;
        while (end < rocks_.side && rocks_.cell[std::size_t{y} * rocks_.side + end]) ++end;
        out.push_back(DrawShape::rect(static_cast<float>(x), static_cast<float>(y), static_cast<float>(end - x), 1.0f, -1, 7));
        x = end;
      }
    std::vector<std::uint32_t> alive(kMaxPlayers, 0);
    const float r = static_cast<float>(kC.radius) * kUnit;
    const bool same = prev.count() == s_.count();
    for (std::uint32_t u = 0; u < s_.count(); ++u) {
      if (s_.hp[u] <= 0) continue;
      ++alive[s_.owner[u]];
      const float x0 = static_cast<float>(same ? prev.x[u] : s_.x[u]) * kUnit, x1 = static_cast<float>(s_.x[u]) * kUnit;
      const float y0 = static_cast<float>(same ? prev.y[u] : s_.y[u]) * kUnit, y1 = static_cast<float>(s_.y[u]) * kUnit;
      const float x = x0 + (x1 - x0) * alpha, y = y0 + (y1 - y0) * alpha;
      if (s_.selected[u]) out.push_back(DrawShape::circle(x, y, r * 1.5f, -1, 1));
      out.push_back(DrawShape::circle(x, y, r, static_cast<std::int32_t>(s_.owner[u])));
    }
    for (std::uint32_t p = 0; p < s_.players; ++p)
      out.push_back(DrawShape::label(1.0f + 12.0f * static_cast<float>(p % 8), 1.0f + 3.0f * static_cast<float>(p / 8),
                                     2.0f, "P" + std::to_string(p) + " " + std::to_string(alive[p]),
                                     static_cast<std::int32_t>(p)));
  }
  float width() const override { return static_cast<float>(s_.settings.map); }
  float height() const override { return static_cast<float>(s_.settings.map); }

  // Selector s names unit s % count and field (s / count) % 12 (kFieldNames order).
  void perturb(std::uint64_t selector) override {
    const std::uint32_t u = static_cast<std::uint32_t>(selector % s_.count());
    const auto k = static_cast<std::uint32_t>((selector / s_.count()) % kFields);
    switch (k) {
      case 0: s_.x[u] ^= 1; break;
      case 1: s_.y[u] ^= 1; break;
      case 2: s_.vx[u] ^= 1; break;
      case 3: s_.vy[u] ^= 1; break;
      case 4: s_.tx[u] ^= 1; break;
      case 5: s_.ty[u] ^= 1; break;
      case 6: s_.hp[u] ^= 1; break;
      case 7: s_.target[u] ^= 1; break;
      case 8: s_.cooldown[u] ^= 1; break;
      case 9: s_.order[u] ^= 1; break;
      case 10: s_.owner[u] ^= 1; break;
      default: s_.selected[u] ^= 1; break;
    }
  }

 private:
  SkirmishState s_;
  Rocks rocks_;
  Scratch scratch_;
  mutable std::vector<std::uint8_t> scratch_bytes_;
};


}  // namespace

std::unique_ptr<Simulation> make_skirmish(const WorldParams& params) {
  SkirmishSettings s;
  if (params.players < 1 || params.players > static_cast<std::uint32_t>(kMaxPlayers) ||
      !decode_skirmish_settings(params.settings, &s) || std::uint64_t{s.units} * params.players > kSkirmishMaxUnits)
    return nullptr;
  return std::make_unique<SkirmishSimulation>(s, params.players);
}

}  // namespace lockstep
