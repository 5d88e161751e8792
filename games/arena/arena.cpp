// The demo world. Every loop runs in a fixed order that depends only on the state, and every
// float operation is written out so the compiler has no freedom (-ffp-contract=off, no fast-math).
#include "lockstep/arena.hpp"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "lockstep/bytes.hpp"
#include "lockstep/detmath.hpp"
#include "lockstep/state_hash.hpp"

#ifdef __FAST_MATH__
#error "the simulation must not be built with fast-math: it breaks bit-exact determinism"
#endif

namespace lockstep {
namespace {

constexpr std::uint32_t kMagic = 0x3141534c;  // "LSA1" little-endian
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderBytes = 4 * 4 + 2 * 4 + 2 * 8 + 4;  // see write_header

const ArenaConstants kConstants{};

float radius_of(std::uint32_t entity, std::uint32_t players) {
  return entity < players ? kConstants.player_radius : kConstants.body_radius;
}

// Caps a velocity's magnitude at max_speed; sqrt is correctly rounded by IEEE-754.
void cap_speed(float& vx, float& vy) {
  const float s2 = vx * vx + vy * vy;
  const float max2 = kConstants.max_speed * kConstants.max_speed;
  if (s2 > max2) {
    const float k = kConstants.max_speed / std::sqrt(s2);
    vx = vx * k;
    vy = vy * k;
  }
}

// Keeps a disc inside the arena and makes it bounce off the wall it touched.
void keep_inside(float& x, float& y, float& vx, float& vy, float r, float w, float h) {
  if (x < r) { x = r; vx = std::fabs(vx); }
  if (x > w - r) { x = w - r; vx = -std::fabs(vx); }
  if (y < r) { y = r; vy = std::fabs(vy); }
  if (y > h - r) { y = h - r; vy = -std::fabs(vy); }
}

void write_header(const ArenaState& s, ByteWriter& w) {
  w.u32(kMagic);
  w.u32(kFormatVersion);
  w.u32(s.tick);
  w.u32(s.players);
  w.f32(s.width);
  w.f32(s.height);
  w.u64(s.rng.state);
  w.u64(s.rng.inc);
  w.u32(s.entities());
}

// Broad phase: a counting sort of entities into grid cells. Entities are inserted in ascending
// id order, so each cell lists its entities by ascending id: the pair order below is a pure
// function of the positions.
void build_grid(const ArenaState& s, ArenaScratch& g, std::uint32_t cols, std::uint32_t rows) {
  const std::uint32_t n = s.entities();
  const float inv_cell = 1.0f / kConstants.cell_size;
  g.cell_of.resize(n);
  g.cell_start.assign(std::size_t{cols} * rows + 1, 0);
  g.cell_items.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    auto cx = static_cast<std::uint32_t>(s.x[i] * inv_cell);
    auto cy = static_cast<std::uint32_t>(s.y[i] * inv_cell);
    cx = std::min(cx, cols - 1);
    cy = std::min(cy, rows - 1);
    const std::uint32_t c = cy * cols + cx;
    g.cell_of[i] = c;
    ++g.cell_start[c + 1];
  }
  for (std::size_t c = 1; c < g.cell_start.size(); ++c) g.cell_start[c] += g.cell_start[c - 1];
  g.cursor.assign(g.cell_start.begin(), g.cell_start.end() - 1);
  for (std::uint32_t i = 0; i < n; ++i) g.cell_items[g.cursor[g.cell_of[i]]++] = i;
}

// Resolves one overlapping pair: pushes the discs apart along the contact normal in inverse
// proportion to their masses and applies an elastic impulse when they approach.
void resolve_pair(ArenaState& s, std::uint32_t i, std::uint32_t j) {
  const float ri = radius_of(i, s.players);
  const float rj = radius_of(j, s.players);
  const float dx = s.x[j] - s.x[i];
  const float dy = s.y[j] - s.y[i];
  const float reach = ri + rj;
  const float d2 = dx * dx + dy * dy;
  if (d2 >= reach * reach) return;
  float nx = 1.0f, ny = 0.0f, d = 0.0f;  // coincident centres: separate along +x, by id order
  if (d2 > 0.0f) {
    d = std::sqrt(d2);
    nx = dx / d;
    ny = dy / d;
  }
  const float mi = ri * ri, mj = rj * rj;  // mass proportional to area
  const float inv_sum = 1.0f / (mi + mj);
  const float push = reach - d;
  const float push_i = push * (mj * inv_sum);
  const float push_j = push * (mi * inv_sum);
  s.x[i] -= nx * push_i;
  s.y[i] -= ny * push_i;
  s.x[j] += nx * push_j;
  s.y[j] += ny * push_j;
  const float vn = (s.vx[j] - s.vx[i]) * nx + (s.vy[j] - s.vy[i]) * ny;
  if (vn < 0.0f) {
    // Elastic impulse along the normal: J = 2 vn mi mj / (mi + mj).
    const float jmag = 2.0f * vn * (mi * mj * inv_sum);
    const float dvi = jmag / mi, dvj = jmag / mj;
    s.vx[i] += nx * dvi;
    s.vy[i] += ny * dvi;
    s.vx[j] -= nx * dvj;
    s.vy[j] -= ny * dvj;
  }
}

}  // namespace

std::vector<std::uint8_t> encode_arena_settings(const ArenaSettings& s) {
  std::vector<std::uint8_t> out;
  ByteWriter w(out);
  w.u64(s.seed);
  w.u32(s.bodies);
  return out;
}

bool decode_arena_settings(std::span<const std::uint8_t> bytes, ArenaSettings* out) {
  *out = ArenaSettings{};
  if (bytes.empty()) return true;
  if (bytes.size() != 12) return false;
  ByteReader r(bytes);
  out->seed = r.u64();
  out->bodies = r.u32();
  return out->bodies <= kMaxBodies;
}

WorldParams arena_world(std::uint64_t seed, std::uint32_t bodies, std::uint32_t players) {
  return WorldParams{encode_arena_settings(ArenaSettings{seed, bodies}), players};
}

bool arena_params(const WorldParams& p, ArenaSettings* settings, std::string* reason) {
  auto fail = [&](const char* why) {
    if (reason) *reason = why;
    return false;
  };
  if (p.players < 1 || p.players > static_cast<std::uint32_t>(kMaxPlayers)) return fail("players must be 1..32");
  if (!decode_arena_settings(p.settings, settings))
    return fail("the arena's settings are 12 bytes: a seed and at most 1000000 bodies");
  return true;
}

void arena_init(const ArenaSettings& settings, std::uint32_t players, ArenaState& s) {
  const struct {
    std::uint64_t seed;
    std::uint32_t bodies, players;
  } p{settings.seed, settings.bodies, players};
  const std::uint32_t n = p.players + p.bodies;
  const float side = std::max(kConstants.min_side,
                              static_cast<float>(std::ceil(std::sqrt(static_cast<double>(n) * kConstants.area_per_entity))));
  s.tick = 0;
  s.players = p.players;
  s.width = side;
  s.height = side;
  s.rng = Rng::seeded(p.seed);
  s.x.assign(n, 0.0f);
  s.y.assign(n, 0.0f);
  s.vx.assign(n, 0.0f);
  s.vy.assign(n, 0.0f);
  s.heading.assign(p.players, 0.0f);

  // Entities start on a lattice with a spacing above the largest diameter, jittered by the
  // seed; lattice points are taken in id order, players first.
  const auto per_row = static_cast<std::uint32_t>(side / std::sqrt(kConstants.area_per_entity));
  const float spacing = side / static_cast<float>(per_row);
  const float jitter = (spacing - 2.0f * kConstants.player_radius) * 0.5f;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t col = i % per_row, row = i / per_row;
    s.x[i] = (static_cast<float>(col) + 0.5f) * spacing + s.rng.range(-jitter, jitter);
    s.y[i] = (static_cast<float>(row) + 0.5f) * spacing + s.rng.range(-jitter, jitter);
    if (i >= p.players) {
      s.vx[i] = s.rng.range(-kConstants.initial_speed, kConstants.initial_speed);
      s.vy[i] = s.rng.range(-kConstants.initial_speed, kConstants.initial_speed);
    }
    // Rounding may put a jittered disc a hair outside: tick 0 obeys the same bounds as every tick.
    keep_inside(s.x[i], s.y[i], s.vx[i], s.vy[i], radius_of(i, p.players), side, side);
  }
  for (std::uint32_t i = 0; i < p.players; ++i) s.heading[i] = detmath::wrap_angle(s.rng.range(-detmath::kPi, detmath::kPi));
}

namespace {

// 1. Players steer, in slot order. Slots not present coast with zero input.
void steer_players(ArenaState& s, const InputFrame& frame, const ArenaConstants& k) {
  for (std::uint32_t p = 0; p < s.players; ++p) {
    const ArenaInput in =
        (frame.present >> p) & 1u && p < frame.players ? ArenaInput::decode(frame.input(p)) : ArenaInput{};
    const float turn = static_cast<float>(in.turn) * (1.0f / 127.0f);
    const float thrust = static_cast<float>(in.thrust) * (1.0f / 127.0f);
    s.heading[p] = detmath::wrap_angle(s.heading[p] + turn * k.turn_rate * kDt);
    const float a = thrust * k.thrust_accel * kDt;
    s.vx[p] = (s.vx[p] + detmath::cos(s.heading[p]) * a) * k.player_drag;
    s.vy[p] = (s.vy[p] + detmath::sin(s.heading[p]) * a) * k.player_drag;
  }
}

// 2. A periodic kick from the state's own PRNG keeps the passive bodies moving.
void kick_body(ArenaState& s, Tick tick, const ArenaConstants& k) {
  const std::uint32_t n = s.entities();
  if (n <= s.players || k.kick_interval == 0 || tick % k.kick_interval != 0) return;
  const std::uint32_t target = s.players + s.rng.below(n - s.players);
  const float angle = s.rng.range(-detmath::kPi, detmath::kPi);
  s.vx[target] += detmath::cos(angle) * k.kick_speed;
  s.vy[target] += detmath::sin(angle) * k.kick_speed;
}

// 3. Integrate and bounce off the walls, in id order.
void integrate(ArenaState& s) {
  for (std::uint32_t i = 0; i < s.entities(); ++i) {
    cap_speed(s.vx[i], s.vy[i]);
    s.x[i] += s.vx[i] * kDt;
    s.y[i] += s.vy[i] * kDt;
    keep_inside(s.x[i], s.y[i], s.vx[i], s.vy[i], radius_of(i, s.players), s.width, s.height);
  }
}

// 4. Contacts. Cells are visited in index order, entities within a cell by ascending id, and
//    each entity is tested against later entities of its own cell and every entity of the four
//    "forward" neighbour cells (E, SW, S, SE), so every pair is resolved exactly once, in an
//    order fixed by the state alone. Resolution is sequential (Gauss-Seidel): a later pair
//    sees positions moved by an earlier one, which is why the order must be fixed.
void resolve_contacts(ArenaState& s, ArenaScratch& scratch, const ArenaConstants& k) {
  const std::uint32_t n = s.entities();
  const auto cols = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(s.width / k.cell_size));
  const auto rows = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(s.height / k.cell_size));
  build_grid(s, scratch, cols, rows);
  const auto& start = scratch.cell_start;
  const auto& items = scratch.cell_items;
  // The overlap test reads positions gathered in cell order (cache-friendly at 100 000 bodies)
  // and kept equal to the live ones after every resolution, so each test sees exactly the
  // values, and computes exactly the expression, that resolve_pair does: the results are
  // bit-identical to testing the entity arrays directly.
  auto& gx = scratch.gx;
  auto& gy = scratch.gy;
  auto& gr = scratch.gr;
  gx.resize(n);
  gy.resize(n);
  gr.resize(n);
  for (std::uint32_t a = 0; a < n; ++a) {
    gx[a] = s.x[items[a]];
    gy[a] = s.y[items[a]];
    gr[a] = radius_of(items[a], s.players);
  }
  auto contact = [&](std::uint32_t a, std::uint32_t b) {
    const float dx = gx[b] - gx[a];
    const float dy = gy[b] - gy[a];
    const float reach = gr[a] + gr[b];
    if (dx * dx + dy * dy >= reach * reach) return;
    const std::uint32_t i = items[a], j = items[b];
    resolve_pair(s, i, j);
    gx[a] = s.x[i];
    gy[a] = s.y[i];
    gx[b] = s.x[j];
    gy[b] = s.y[j];
  };
  for (std::uint32_t cy = 0; cy < rows; ++cy)
    for (std::uint32_t cx = 0; cx < cols; ++cx) {
      const std::uint32_t c = cy * cols + cx;
      for (std::uint32_t a = start[c]; a < start[c + 1]; ++a) {
        for (std::uint32_t b = a + 1; b < start[c + 1]; ++b) contact(a, b);
        auto visit = [&](std::uint32_t nc) {
          for (std::uint32_t b = start[nc]; b < start[nc + 1]; ++b) contact(a, b);
        };
        if (cx + 1 < cols) visit(c + 1);
        if (cy + 1 < rows) {
          if (cx > 0) visit(c + cols - 1);
          visit(c + cols);
          if (cx + 1 < cols) visit(c + cols + 1);
        }
      }
    }
}

}  // namespace

void arena_step(ArenaState& s, const InputFrame& frame, ArenaScratch& scratch) {
  assert(frame.tick == s.tick + 1);
  const ArenaConstants& k = kConstants;
  steer_players(s, frame, k);
  kick_body(s, frame.tick, k);
  integrate(s);
  resolve_contacts(s, scratch, k);
  // 5. Contacts may push a disc through a wall: clamp once more so nothing ever leaves.
  for (std::uint32_t i = 0; i < s.entities(); ++i)
    keep_inside(s.x[i], s.y[i], s.vx[i], s.vy[i], radius_of(i, s.players), s.width, s.height);
  s.tick = frame.tick;
}

namespace {

// Mixes everything that decides the arena's results into one value.
std::uint64_t compute_fingerprint() {
  std::vector<std::uint8_t> bytes;
  ByteWriter w(bytes);
  const char name[] = "lockstep-arena";
  w.raw(name, sizeof name);
  w.u32(kFormatVersion);
  w.raw(&kConstants, sizeof kConstants);  // plain floats and one u32: no padding
  // Floating-point build settings that change results.
  w.u32(static_cast<std::uint32_t>(FLT_EVAL_METHOD));
  w.u32(static_cast<std::uint32_t>(sizeof(float)));
  w.u32(static_cast<std::uint32_t>(FLT_MANT_DIG));
  return hash_bytes(bytes);
}
static_assert(sizeof(ArenaConstants) == 11 * sizeof(float) + sizeof(std::uint32_t));

class ArenaSimulation final : public Simulation {
 public:
  ArenaSimulation(const ArenaSettings& settings, std::uint32_t players)
      : fingerprint_(world_fingerprint(code_fingerprint(), encode_arena_settings(settings))) {
    arena_init(settings, players, s_);
  }
  ArenaSimulation(const ArenaSimulation& o) : fingerprint_(o.fingerprint_), s_(o.s_) {}

  Tick tick() const override { return s_.tick; }
  void step(const InputFrame& frame) override { arena_step(s_, frame, scratch_); }
  std::uint32_t input_size() const override { return ArenaInput::kBytes; }

  void serialize(std::vector<std::uint8_t>& out) const override {
    out.reserve(out.size() + kHeaderBytes + s_.x.size() * 16 + s_.heading.size() * 4);
    ByteWriter w(out);
    write_header(s_, w);
    w.array(std::span<const float>(s_.x));
    w.array(std::span<const float>(s_.y));
    w.array(std::span<const float>(s_.vx));
    w.array(std::span<const float>(s_.vy));
    w.array(std::span<const float>(s_.heading));
  }

  bool deserialize(std::span<const std::uint8_t> bytes) override {
    ByteReader r(bytes);
    ArenaState t;
    if (r.u32() != kMagic || r.u32() != kFormatVersion) return false;
    t.tick = r.u32();
    t.players = r.u32();
    t.width = r.f32();
    t.height = r.f32();
    t.rng.state = r.u64();
    t.rng.inc = r.u64();
    const std::uint32_t n = r.u32();
    if (!r.ok() || t.players < 1 || t.players > static_cast<std::uint32_t>(kMaxPlayers) || n < t.players ||
        n - t.players > kMaxBodies || (t.rng.inc & 1u) == 0)
      return false;
    if (!(t.width >= kConstants.min_side && t.width <= 1.0e5f) || !(t.height >= kConstants.min_side && t.height <= 1.0e5f))
      return false;
    if (r.remaining() != std::size_t{n} * 16 + std::size_t{t.players} * 4) return false;
    for (auto* v : {&t.x, &t.y, &t.vx, &t.vy}) {
      v->resize(n);
      r.array(std::span<float>(*v));
    }
    t.heading.resize(t.players);
    r.array(std::span<float>(t.heading));
    if (!r.ok()) return false;
    for (std::uint32_t i = 0; i < n; ++i) {
      const float rad = radius_of(i, t.players);
      if (!(t.x[i] >= rad && t.x[i] <= t.width - rad && t.y[i] >= rad && t.y[i] <= t.height - rad)) return false;
      if (!std::isfinite(t.vx[i]) || !std::isfinite(t.vy[i])) return false;
    }
    for (float a : t.heading)
      if (!(a >= -detmath::kPi && a < detmath::kPi)) return false;
    s_ = std::move(t);
    return true;
  }

  std::uint64_t hash() const override {
    // The same bytes serialize() writes, fed in place: no copy of the arrays.
    std::vector<std::uint8_t> header;
    header.reserve(kHeaderBytes);
    ByteWriter w(header);
    write_header(s_, w);
    StateHasher h;
    h.update(header.data(), header.size());
    h.update(std::span<const float>(s_.x));
    h.update(std::span<const float>(s_.y));
    h.update(std::span<const float>(s_.vx));
    h.update(std::span<const float>(s_.vy));
    h.update(std::span<const float>(s_.heading));
    return h.digest();
  }

  std::uint32_t entity_count() const override { return s_.entities(); }
  std::uint64_t entity_hash(std::uint32_t e) const override {
    assert(e < s_.entities());
    std::vector<std::uint8_t> bytes;
    ByteWriter w(bytes);
    w.u32(e);
    w.f32(s_.x[e]);
    w.f32(s_.y[e]);
    w.f32(s_.vx[e]);
    w.f32(s_.vy[e]);
    if (e < s_.players) w.f32(s_.heading[e]);
    return hash_bytes(bytes);
  }

  std::vector<FieldValue> entity_fields(std::uint32_t e) const override {
    assert(e < s_.entities());
    std::vector<FieldValue> f{f32("x", s_.x[e]), f32("y", s_.y[e]), f32("vx", s_.vx[e]), f32("vy", s_.vy[e])};
    if (e < s_.players) f.push_back(f32("heading", s_.heading[e]));
    return f;
  }
  std::vector<FieldValue> global_fields() const override {
    using K = FieldValue::Kind;
    return {{"tick", K::U32, s_.tick}, {"players", K::U32, s_.players}, f32("width", s_.width), f32("height", s_.height),
            {"rng.state", K::U64, s_.rng.state}, {"rng.inc", K::U64, s_.rng.inc}};
  }

  std::unique_ptr<Simulation> clone() const override { return std::make_unique<ArenaSimulation>(*this); }
  void assign(const Simulation& other) override {
    const auto* o = dynamic_cast<const ArenaSimulation*>(&other);
    assert(o != nullptr);
    fingerprint_ = o->fingerprint_;
    s_.tick = o->s_.tick;
    s_.players = o->s_.players;
    s_.width = o->s_.width;
    s_.height = o->s_.height;
    s_.rng = o->s_.rng;
    s_.x.assign(o->s_.x.begin(), o->s_.x.end());
    s_.y.assign(o->s_.y.begin(), o->s_.y.end());
    s_.vx.assign(o->s_.vx.begin(), o->s_.vx.end());
    s_.vy.assign(o->s_.vy.begin(), o->s_.vy.end());
    s_.heading.assign(o->s_.heading.begin(), o->s_.heading.end());
  }

  std::uint64_t fingerprint() const override { return fingerprint_; }
  static std::uint64_t code_fingerprint() {
    static const std::uint64_t fp = compute_fingerprint();
    return fp;
  }

  // Passive bodies, then each player's heading (a white line reaching past its disc), then the
  // players' discs on top.
  void draw(const Simulation& previous, float alpha, DrawList& out) const override {
    const auto* p = dynamic_cast<const ArenaSimulation*>(&previous);
    assert(p != nullptr);
    const ArenaState& a = p->s_;
    const ArenaState& b = s_;
    const bool same = a.entities() == b.entities() && a.players == b.players;
    const ArenaState& from = same ? a : b;
    out.clear();
    out.reserve(b.entities() + b.players);
    auto x_of = [&](std::uint32_t i) { return from.x[i] + (b.x[i] - from.x[i]) * alpha; };
    auto y_of = [&](std::uint32_t i) { return from.y[i] + (b.y[i] - from.y[i]) * alpha; };
    for (std::uint32_t i = b.players; i < b.entities(); ++i)
      out.push_back(DrawShape::circle(x_of(i), y_of(i), radius_of(i, b.players), -1, 0));
    for (std::uint32_t i = 0; i < b.players; ++i) {
      const float heading = detmath::lerp_angle(from.heading[i], b.heading[i], alpha);
      const float reach = radius_of(i, b.players) * 1.6f;
      out.push_back(DrawShape::line(x_of(i), y_of(i), x_of(i) + detmath::cos(heading) * reach,
                                    y_of(i) + detmath::sin(heading) * reach, -1, 1));
    }
    for (std::uint32_t i = 0; i < b.players; ++i)
      out.push_back(DrawShape::circle(x_of(i), y_of(i), radius_of(i, b.players), static_cast<std::int32_t>(i)));
  }
  float width() const override { return s_.width; }
  float height() const override { return s_.height; }

  // Selector k names field k / n (0 x, 1 y, 2 vx, 3 vy) of entity k % n, n = entity count.
  void perturb(std::uint64_t selector) override {
    const std::uint64_t floats = std::uint64_t{s_.entities()} * 4;
    const std::uint64_t k = selector % floats;
    std::vector<float>* arrays[] = {&s_.x, &s_.y, &s_.vx, &s_.vy};
    float& f = (*arrays[k / s_.entities()])[k % s_.entities()];
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits ^= 1u;
    std::memcpy(&f, &bits, sizeof bits);
  }

  const ArenaState& state() const { return s_; }

 private:
  static FieldValue f32(const char* name, float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return {name, FieldValue::Kind::F32, bits};
  }

  std::uint64_t fingerprint_;  // the code's and the world settings'
  ArenaState s_;
  ArenaScratch scratch_;
};

}  // namespace

std::unique_ptr<Simulation> make_arena(const WorldParams& params) {
  ArenaSettings settings;
  if (!arena_params(params, &settings, nullptr)) return nullptr;
  return std::make_unique<ArenaSimulation>(settings, params.players);
}

}  // namespace lockstep
