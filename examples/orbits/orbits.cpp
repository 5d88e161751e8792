// orbits: a small orbital game built out of tree against an installed lockstep, as a team would
// build theirs. Moons circle a star under gravity; each player flies a ship, turning and thrusting
// (its 2-byte input), and may fire a one-off boost (a command). Everything is double-precision
// floating point, deterministic because the build uses lockstep::module's flags (no FMA
// contraction, no fast-math), the only library call is sqrt (correctly rounded everywhere), and
// every loop runs in index order.
#include "orbits.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

static_assert(std::endian::native == std::endian::little, "the serialization is little-endian bytes");

namespace {

constexpr double kDt = 0.01;            // seconds per tick: 100 Hz
constexpr double kStarGm = 4000.0;      // the star's pull
constexpr double kMoonGm = 40.0;        // each moon's
constexpr double kSoftening = 1.0;      // keeps close passes finite
constexpr double kThrust = 12.0;        // units/s^2 while thrusting
constexpr double kBoost = 6.0;          // units/s at once, per boost command
constexpr double kStarRadius = 4.0;     // a ship closer than this crashes and starts again
constexpr double kHalf = 100.0;         // the map is -100..100 in both axes
// cos and sin of 3 degrees: a turn per tick is a fixed rotation, no trigonometry at run time.
constexpr double kCos = 0.99862953475457383;
constexpr double kSin = 0.052335956242943835;
constexpr uint8_t kBoostCommand = 1;

struct Settings {
  uint64_t seed = 1;
  uint32_t moons = 12;
};

}  // namespace


namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double unit(uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)

bool read_settings(const uint8_t* b, size_t n, Settings* s) {
  *s = Settings{};
  if (n == 0) return true;
  if (n != 12) return false;
  std::memcpy(&s->seed, b, 8);
  std::memcpy(&s->moons, b + 8, 4);
  return s->moons >= 1 && s->moons <= kMaxMoons;
}

void place(lockstep_sim* s, uint32_t p) {  // a ship at its start: on a circular orbit
  const double r = 60.0;
  const double sx = (p % 2 == 0) ? 1.0 : -1.0, sy = (p % 4 < 2) ? 1.0 : -1.0;
  const double k = 1.0 / std::sqrt(2.0);
  const double speed = std::sqrt(kStarGm / r);
  Ship& sh = s->ship[p];
  sh.x = sx * r * k;
  sh.y = sy * r * k;
  sh.vx = -sy * speed * k;
  sh.vy = sx * speed * k;
  sh.hx = sh.vx / speed;
  sh.hy = sh.vy / speed;
}

void pull(double x, double y, double cx, double cy, double gm, double* ax, double* ay) {
  const double dx = cx - x, dy = cy - y;
  const double r2 = dx * dx + dy * dy + kSoftening;
  const double f = gm / (r2 * std::sqrt(r2));
  *ax += dx * f;
  *ay += dy * f;
}

int parse_world(const char* text, const uint8_t* settings, size_t n, uint8_t* out, size_t cap, size_t* out_len,
                char* error, size_t error_cap) {
  Settings s;
  if (!read_settings(settings, n, &s)) s = Settings{};
  std::string rest = text ? text : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || value[0] == '-') {
      std::snprintf(error, error_cap, "orbits: %s must be a whole number", key.c_str());
      return 0;
    }
    if (key == "seed") {
      s.seed = v;
    } else if (key == "moons") {
      if (v < 1 || v > kMaxMoons) {
        std::snprintf(error, error_cap, "orbits: moons must be 1..%u", kMaxMoons);
        return 0;
      }
      s.moons = static_cast<uint32_t>(v);
    } else {
      std::snprintf(error, error_cap, "orbits has no world setting '%s' (it has seed, moons)", key.c_str());
      return 0;
    }
  }
  if (cap < 12) return 0;
  std::memcpy(out, &s.seed, 8);
  std::memcpy(out + 8, &s.moons, 4);
  *out_len = 12;
  return 1;
}

size_t settings_text(const uint8_t* settings, size_t n, char* out, size_t cap) {
  Settings s;
  if (!read_settings(settings, n, &s)) return 0;
  return static_cast<size_t>(std::snprintf(out, cap, "seed=%llu,moons=%u", static_cast<unsigned long long>(s.seed),
                                           s.moons)) + 1;
}

lockstep_sim* create(const uint8_t* settings, size_t n, uint32_t players) {
  Settings st;
  if (!read_settings(settings, n, &st) || players < 1 || players > kMaxPlayers) return nullptr;
  auto* s = new (std::nothrow) lockstep_sim{};  // value-initialised: no stray bytes anywhere
  if (!s) return nullptr;
  s->players = players;
  s->moons = st.moons;
  s->seed = st.seed;
  for (uint32_t i = 0; i < st.moons; ++i) {
    // A direction from two uniform numbers, normalised; a radius; a circular orbit's speed.
    double dx = unit(mix(st.seed * 4 + i * 2)) * 2 - 1, dy = unit(mix(st.seed * 4 + i * 2 + 1)) * 2 - 1;
    const double len = std::sqrt(dx * dx + dy * dy) + 1e-9;
    dx /= len;
    dy /= len;
    const double r = 15.0 + 70.0 * unit(mix(st.seed ^ (0x1000u + i)));
    const double v = std::sqrt(kStarGm / r);
    s->moon[i] = Body{dx * r, dy * r, -dy * v, dx * v};
  }
  for (uint32_t p = 0; p < players; ++p) place(s, p);
  return s;
}

void destroy(lockstep_sim* s) { delete s; }
lockstep_sim* clone(const lockstep_sim* s) { return new (std::nothrow) lockstep_sim(*s); }
void assign(lockstep_sim* to, const lockstep_sim* from) { *to = *from; }
uint32_t tick(const lockstep_sim* s) { return s->tick; }

void step(lockstep_sim* s, const lockstep_frame* f) {
  // Moons: the star and every other moon pull, all from the positions at the start of the tick.
  double ax[kMaxMoons], ay[kMaxMoons];
  for (uint32_t i = 0; i < s->moons; ++i) {
    ax[i] = 0;
    ay[i] = 0;
    pull(s->moon[i].x, s->moon[i].y, 0, 0, kStarGm, &ax[i], &ay[i]);
    for (uint32_t j = 0; j < s->moons; ++j)
      if (j != i) pull(s->moon[i].x, s->moon[i].y, s->moon[j].x, s->moon[j].y, kMoonGm * 0.05, &ax[i], &ay[i]);
  }
  for (uint32_t p = 0; p < s->players; ++p) {
    Ship& sh = s->ship[p];
    double sax = 0, say = 0;
    pull(sh.x, sh.y, 0, 0, kStarGm, &sax, &say);
    for (uint32_t j = 0; j < s->moons; ++j) pull(sh.x, sh.y, s->moon[j].x, s->moon[j].y, kMoonGm, &sax, &say);
    if ((f->present >> p) & 1u) {
      const uint8_t* in = f->inputs + static_cast<size_t>(p) * f->input_size;
      // Byte 0: 0 straight, 1 left, 2 right; byte 1: 0 or 1 thrust. Anything else does nothing.
      if (in[0] == 1 || in[0] == 2) {
        const double s_ = in[0] == 1 ? kSin : -kSin;
        const double hx = sh.hx * kCos - sh.hy * s_, hy = sh.hx * s_ + sh.hy * kCos;
        const double len = std::sqrt(hx * hx + hy * hy);
        sh.hx = hx / len;
        sh.hy = hy / len;
      }
      if (in[1] == 1) {
        sax += sh.hx * kThrust;
        say += sh.hy * kThrust;
      }
    }
    for (uint32_t c = 0; c < f->command_count; ++c) {
      const lockstep_command& cmd = f->commands[c];
      // A boost is exactly one byte; any other command is invalid and does nothing.
      if (cmd.slot == p && cmd.size == 1 && cmd.bytes[0] == kBoostCommand) {
        sh.vx += sh.hx * kBoost;
        sh.vy += sh.hy * kBoost;
      }
    }
    sh.vx += sax * kDt;
    sh.vy += say * kDt;
    sh.x += sh.vx * kDt;
    sh.y += sh.vy * kDt;
    // Off the map: back in from the other side. Into the star: a crash, and a new start.
    if (sh.x < -kHalf) sh.x += 2 * kHalf;
    if (sh.x >= kHalf) sh.x -= 2 * kHalf;
    if (sh.y < -kHalf) sh.y += 2 * kHalf;
    if (sh.y >= kHalf) sh.y -= 2 * kHalf;
    if (sh.x * sh.x + sh.y * sh.y < kStarRadius * kStarRadius) {
      ++sh.crashes;
      place(s, p);
    }
  }
  for (uint32_t i = 0; i < s->moons; ++i) {
    Body& m = s->moon[i];
    m.vx += ax[i] * kDt;
    m.vy += ay[i] * kDt;
    m.x += m.vx * kDt;
    m.y += m.vy * kDt;
  }
  s->tick = f->tick;
}

// The canonical bytes: tick, players, moons, seed, then every moon's 4 doubles and every ship's 6
// doubles and crash count, little-endian, nothing else (no padding, no pointers).
constexpr size_t kHeader = 4 + 4 + 4 + 8, kMoonBytes = 4 * 8, kShipBytes = 6 * 8 + 4;

size_t serialized_size(uint32_t players, uint32_t moons) { return kHeader + moons * kMoonBytes + players * kShipBytes; }

size_t serialize(const lockstep_sim* s, uint8_t* out, size_t cap) {
  const size_t n = serialized_size(s->players, s->moons);
  if (cap < n) return n;
  uint8_t* o = out;
  auto put = [&o](const void* v, size_t k) {
    std::memcpy(o, v, k);
    o += k;
  };
  put(&s->tick, 4);
  put(&s->players, 4);
  put(&s->moons, 4);
  put(&s->seed, 8);
  for (uint32_t i = 0; i < s->moons; ++i) put(&s->moon[i], kMoonBytes);
  for (uint32_t p = 0; p < s->players; ++p) {
    put(&s->ship[p], 6 * 8);
    put(&s->ship[p].crashes, 4);
  }
  return n;
}

int deserialize(lockstep_sim* s, const uint8_t* b, size_t n) {
  if (n < kHeader) return 0;
  lockstep_sim t{};
  std::memcpy(&t.tick, b, 4);
  std::memcpy(&t.players, b + 4, 4);
  std::memcpy(&t.moons, b + 8, 4);
  std::memcpy(&t.seed, b + 12, 8);
  if (t.players < 1 || t.players > kMaxPlayers || t.moons < 1 || t.moons > kMaxMoons ||
      n != serialized_size(t.players, t.moons))
    return 0;
  const uint8_t* i = b + kHeader;
  for (uint32_t m = 0; m < t.moons; ++m, i += kMoonBytes) std::memcpy(&t.moon[m], i, kMoonBytes);
  for (uint32_t p = 0; p < t.players; ++p, i += kShipBytes) {
    std::memcpy(&t.ship[p], i, 6 * 8);
    std::memcpy(&t.ship[p].crashes, i + 6 * 8, 4);
  }
  *s = t;
  return 1;
}

uint32_t entity_count(const lockstep_sim* s) { return s->moons + s->players; }

// memcpy, not std::bit_cast: the wasm build's C++ library (emscripten 3.1) has no std::bit_cast.
uint64_t bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
}

size_t fields(const lockstep_sim* s, uint32_t e, lockstep_field* out, size_t cap) {
  lockstep_field f[7];
  size_t k = 0;
  if (e == UINT32_MAX) {
    f[k++] = {"tick", 2, s->tick};
  } else if (e < s->moons) {
    const Body& m = s->moon[e];
    f[k++] = {"x", 1, bits(m.x)};
    f[k++] = {"y", 1, bits(m.y)};
    f[k++] = {"vx", 1, bits(m.vx)};
    f[k++] = {"vy", 1, bits(m.vy)};
  } else if (e < s->moons + s->players) {
    const Ship& sh = s->ship[e - s->moons];
    f[k++] = {"x", 1, bits(sh.x)};
    f[k++] = {"y", 1, bits(sh.y)};
    f[k++] = {"vx", 1, bits(sh.vx)};
    f[k++] = {"vy", 1, bits(sh.vy)};
    f[k++] = {"hx", 1, bits(sh.hx)};
    f[k++] = {"hy", 1, bits(sh.hy)};
    f[k++] = {"crashes", 2, sh.crashes};
  }
  if (k <= cap) std::memcpy(out, f, k * sizeof(lockstep_field));
  return k;
}

void flip(double* v) {
  const uint64_t u = bits(*v) ^ 1u;
  std::memcpy(v, &u, 8);
}

void perturb(lockstep_sim* s, uint64_t selector) {
  const uint64_t values = uint64_t{s->moons} * 4 + uint64_t{s->players} * 7;
  uint64_t k = selector % values;
  if (k < uint64_t{s->moons} * 4) {
    Body& m = s->moon[k / 4];
    double* v[] = {&m.x, &m.y, &m.vx, &m.vy};
    flip(v[k % 4]);
    return;
  }
  k -= uint64_t{s->moons} * 4;
  Ship& sh = s->ship[k / 7];
  double* v[] = {&sh.x, &sh.y, &sh.vx, &sh.vy, &sh.hx, &sh.hy};
  if (k % 7 == 6) sh.crashes ^= 1u;
  else flip(v[k % 7]);
}

float blend(double a, double b, float alpha) { return static_cast<float>(a + (b - a) * alpha); }

size_t draw(const lockstep_sim* cur, const lockstep_sim* prev, float alpha, lockstep_shape* out, size_t cap) {
  const size_t n = 1 + cur->moons + 2 * size_t{cur->players};
  if (cap < n) return n;
  const bool same = prev->moons == cur->moons && prev->players == cur->players;
  const lockstep_sim* p = same ? prev : cur;
  const float h = static_cast<float>(kHalf);
  size_t k = 0;
  out[k++] = {0, h, h, static_cast<float>(kStarRadius), 0, -1, 3, nullptr};
  for (uint32_t i = 0; i < cur->moons; ++i)
    out[k++] = {0, blend(p->moon[i].x, cur->moon[i].x, alpha) + h, blend(p->moon[i].y, cur->moon[i].y, alpha) + h,
                1.5f, 0, -1, 1, nullptr};
  for (uint32_t q = 0; q < cur->players; ++q) {
    const Ship &a = p->ship[q], &b = cur->ship[q];
    // A ship that wrapped or crashed this tick is drawn where it is now, not across the map.
    const bool jumped = (b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y) > 100.0;
    const float x = (jumped ? static_cast<float>(b.x) : blend(a.x, b.x, alpha)) + h;
    const float y = (jumped ? static_cast<float>(b.y) : blend(a.y, b.y, alpha)) + h;
    out[k++] = {0, x, y, 1.2f, 0, static_cast<int32_t>(q), 0, nullptr};
    out[k++] = {2, x, y, x + 3.0f * static_cast<float>(b.hx), y + 3.0f * static_cast<float>(b.hy), static_cast<int32_t>(q),
                0, nullptr};
  }
  return k;
}

float width(const lockstep_sim*) { return static_cast<float>(2 * kHalf); }
float height(const lockstep_sim*) { return static_cast<float>(2 * kHalf); }

void bot(uint64_t seed, uint32_t t, uint8_t* input, const lockstep_command_sink* commands) {
  const uint64_t h = mix(seed * 7919 + t / 40);
  input[0] = static_cast<uint8_t>(h % 3);
  input[1] = ((h >> 8) & 3u) == 0 ? 1 : 0;
  if (t % 250 == seed % 250) {
    const uint8_t boost = kBoostCommand;
    commands->add(commands->ctx, &boost, 1);
  }
}

// Keys: bit k of held in the order Up, Down, Left, Right, Space, Enter, A..Z (module_abi.h).
bool held(const lockstep_controls* c, int k) { return (c->held >> k) & 1u; }
constexpr int kUp = 0, kLeft = 2, kRight = 3, kSpace = 4, kA = 6;
constexpr int kD = kA + 3, kW = kA + 22;

void from_controls(const lockstep_controls* c, int32_t memory[16], uint8_t* input,
                   const lockstep_command_sink* commands) {
  const bool left = held(c, kLeft) || held(c, kA), right = held(c, kRight) || held(c, kD);
  input[0] = left == right ? 0 : left ? 1 : 2;
  input[1] = held(c, kUp) || held(c, kW) ? 1 : 0;
  const bool space = held(c, kSpace);
  if (space && memory[0] == 0) {  // one boost per press
    const uint8_t boost = kBoostCommand;
    commands->add(commands->ctx, &boost, 1);
  }
  memory[0] = space ? 1 : 0;
}

const lockstep_module_v2 kOrbits = {
    LOCKSTEP_MODULE_ABI_VERSION,
    "orbits",
    1,
    0x6f72626974730001ull,  // raise whenever results may change
    "ships and moons around a star, in doubles (an out-of-tree example)",
    "seed=1 (world seed) moons=12 (1..64)",
    "left/right or A/D turn, up or W thrusts, space boosts",
    2,
    "seed=20261123,moons=24",
    parse_world, settings_text, create, destroy, clone, assign, tick, step, serialize, deserialize,
    entity_count, fields, perturb, draw, width, height, bot, from_controls,
};

}  // namespace

const lockstep_module_v2* orbits_table() { return &kOrbits; }

extern "C" __attribute__((visibility("default"))) const lockstep_module_v2* lockstep_module(uint32_t host_abi_version) {
  return host_abi_version == LOCKSTEP_MODULE_ABI_VERSION ? &kOrbits : nullptr;
}
