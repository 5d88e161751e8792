// crates: a physics game on Box2D 2.4 (Debian's libbox2d-dev) as a lockstep module. Crates fall
// into a walled pen; each player pushes a disc around it (a 2-byte input: x and y, -1..1).
//
// A physics engine keeps state its bodies do not show: a contact cache with the last tick's
// impulses (warm starting), the order of its contacts, a broad-phase tree, sleep timers, and each
// body's centre of mass next to its origin. A world loaded from bytes has none of it, so it steps
// differently from the world that ran from tick 0. This module takes the first of the two designs
// that pass every check (docs/GUIDE.md, "Physics engines"): the bytes are the whole state, and
// every tick builds a fresh b2World from them, steps it once and reads the bodies back. Every peer,
// a late joiner loaded from a snapshot included, then steps the same world.
//
// Built with -DCRATES_NAIVE it is the design a team writes first: one b2World kept for the whole
// session, serialized by reading its bodies and loaded by rebuilding it. Live sessions of such a
// module stay in sync (everyone has the same history), but a joiner loaded from a snapshot
// diverges on its first tick; lockstep-synctest's history check catches it before any player does.
#include <box2d/box2d.h>
#include <lockstep/module_abi.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

static_assert(std::endian::native == std::endian::little, "the serialization is little-endian bytes");

namespace {

constexpr uint32_t kMaxPlayers = 32;
constexpr uint32_t kMaxCrates = 256;
constexpr float kDt = 0.01f;             // seconds per tick: 100 Hz
constexpr int kVelocityIterations = 8;
constexpr int kPositionIterations = 3;
constexpr float kHalfWidth = 20.0f;      // the pen: x in -20..20, y from 0 up
constexpr float kHeight = 40.0f;
constexpr float kCrateHalf = 0.5f;
constexpr float kDiscRadius = 0.8f;
constexpr float kPush = 0.6f;            // impulse per tick at full input

struct Settings {
  uint64_t seed = 1;
  uint32_t crates = 40;
  uint32_t tilt = 0;  // the first crate's starting angle, in microradians
};

// One body's state: what Box2D reads back, and all a fresh world needs to go on.
struct BodyState {
  float x, y, angle, vx, vy, w;
};
constexpr size_t kBodyBytes = sizeof(BodyState);
static_assert(kBodyBytes == 24, "six floats, no padding");
constexpr size_t kHeader = 4 + 4 + 4 + 8;  // tick, players, crates, seed

}  // namespace

struct lockstep_sim {
  uint32_t tick = 0, players = 0, crates = 0;
  uint64_t seed = 0;
  BodyState body[kMaxCrates + kMaxPlayers] = {};  // crates first, then one disc per player
#ifdef CRATES_NAIVE
  std::unique_ptr<b2World> world;                  // the live world, with all it hides
  b2Body* live[kMaxCrates + kMaxPlayers] = {};
#endif
};

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float unit(uint64_t h) { return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); }  // [0, 1), exact

// 12 bytes (seed, crates) or 16 (and tilt).
bool read_settings(const uint8_t* b, size_t n, Settings* s) {
  *s = Settings{};
  if (n == 0) return true;
  if (n != 12 && n != 16) return false;
  std::memcpy(&s->seed, b, 8);
  std::memcpy(&s->crates, b + 8, 4);
  if (n == 16) std::memcpy(&s->tilt, b + 12, 4);
  return s->crates >= 1 && s->crates <= kMaxCrates;
}

// The tilt in radians: the microradians divided in binary64 (exact operands, one rounding) and
// rounded to float, the same on every machine.
float tilt_radians(uint32_t microradians) { return static_cast<float>(static_cast<double>(microradians) / 1e6); }

uint32_t bodies(const lockstep_sim* s) { return s->crates + s->players; }

// A world holding the pen and every body of `s`, in id order. The fixture goes on before the
// velocities are set: adding a fixture moves the centre of mass, and Box2D keeps the velocity of
// the centre, so a spinning body given its velocity first would change it here.
std::unique_ptr<b2World> build_world(const lockstep_sim* s, b2Body** out) {
  auto w = std::make_unique<b2World>(b2Vec2(0.0f, -10.0f));
  b2BodyDef pen;
  b2Body* walls = w->CreateBody(&pen);
  b2EdgeShape edge;
  edge.SetTwoSided(b2Vec2(-kHalfWidth, 0.0f), b2Vec2(kHalfWidth, 0.0f));
  walls->CreateFixture(&edge, 0.0f);
  edge.SetTwoSided(b2Vec2(-kHalfWidth, 0.0f), b2Vec2(-kHalfWidth, kHeight));
  walls->CreateFixture(&edge, 0.0f);
  edge.SetTwoSided(b2Vec2(kHalfWidth, 0.0f), b2Vec2(kHalfWidth, kHeight));
  walls->CreateFixture(&edge, 0.0f);
  b2PolygonShape box;
  box.SetAsBox(kCrateHalf, kCrateHalf);
  b2CircleShape disc;
  disc.m_radius = kDiscRadius;
  for (uint32_t i = 0; i < bodies(s); ++i) {
    const BodyState& b = s->body[i];
    b2BodyDef d;
    d.type = b2_dynamicBody;
    d.position.Set(b.x, b.y);
    d.angle = b.angle;
    d.allowSleep = false;  // a sleep timer is history too
    b2Body* body = w->CreateBody(&d);
    b2FixtureDef f;
    f.shape = i < s->crates ? static_cast<const b2Shape*>(&box) : static_cast<const b2Shape*>(&disc);
    f.density = i < s->crates ? 1.0f : 4.0f;
    f.friction = 0.4f;
    body->CreateFixture(&f);
    body->SetLinearVelocity(b2Vec2(b.vx, b.vy));
    body->SetAngularVelocity(b.w);
    out[i] = body;
  }
  return w;
}

void read_world(lockstep_sim* s, b2Body* const* live) {
  for (uint32_t i = 0; i < bodies(s); ++i) {
    const b2Body* b = live[i];
    s->body[i] = {b->GetPosition().x, b->GetPosition().y, b->GetAngle(),
                  b->GetLinearVelocity().x, b->GetLinearVelocity().y, b->GetAngularVelocity()};
  }
}

// Each player's push this tick: input byte 0 is x, byte 1 is y, as signed -1..1 (others: 0).
float axis(uint8_t v) { return v == 1 ? 1.0f : v == 255 ? -1.0f : 0.0f; }

void push(b2Body* const* live, const lockstep_sim* s, const lockstep_frame* f) {
  for (uint32_t p = 0; p < s->players && p < f->players; ++p) {
    if (!((f->present >> p) & 1u)) continue;
    const uint8_t* in = f->inputs + size_t{p} * f->input_size;
    live[s->crates + p]->ApplyLinearImpulseToCenter(b2Vec2(axis(in[0]) * kPush, axis(in[1]) * kPush), true);
  }
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
      std::snprintf(error, error_cap, "crates: %s must be a whole number", key.c_str());
      return 0;
    }
    if (key == "seed") {
      s.seed = v;
    } else if (key == "tilt") {
      if (v > 1000000000ull) {
        std::snprintf(error, error_cap, "crates: tilt must be 0..1000000000 microradians");
        return 0;
      }
      s.tilt = static_cast<uint32_t>(v);
    } else if (key == "crates") {
      if (v < 1 || v > kMaxCrates) {
        std::snprintf(error, error_cap, "crates: crates must be 1..%u", kMaxCrates);
        return 0;
      }
      s.crates = static_cast<uint32_t>(v);
    } else {
      std::snprintf(error, error_cap, "crates has no world setting '%s' (it has seed, crates, tilt)", key.c_str());
      return 0;
    }
  }
  const size_t len = s.tilt ? 16 : 12;  // without a tilt, the bytes of the worlds before it
  if (cap < len) return 0;
  std::memcpy(out, &s.seed, 8);
  std::memcpy(out + 8, &s.crates, 4);
  if (s.tilt) std::memcpy(out + 12, &s.tilt, 4);
  *out_len = len;
  return 1;
}

size_t settings_text(const uint8_t* settings, size_t n, char* out, size_t cap) {
  Settings s;
  if (!read_settings(settings, n, &s)) return 0;
  if (s.tilt)
    return static_cast<size_t>(std::snprintf(out, cap, "seed=%llu,crates=%u,tilt=%u", static_cast<unsigned long long>(s.seed),
                                             s.crates, s.tilt)) + 1;
  return static_cast<size_t>(std::snprintf(out, cap, "seed=%llu,crates=%u", static_cast<unsigned long long>(s.seed),
                                           s.crates)) + 1;
}

#ifdef CRATES_NAIVE
void rebuild(lockstep_sim* s) { s->world = build_world(s, s->live); }
#endif

lockstep_sim* create(const uint8_t* settings, size_t n, uint32_t players) {
  Settings st;
  if (!read_settings(settings, n, &st) || players < 1 || players > kMaxPlayers) return nullptr;
  auto* s = new (std::nothrow) lockstep_sim{};
  if (!s) return nullptr;
  s->players = players;
  s->crates = st.crates;
  s->seed = st.seed;
  // Crates stacked in rows of 16 above the floor, each nudged by the seed; discs along the floor.
  for (uint32_t i = 0; i < st.crates; ++i) {
    const uint64_t h = mix(st.seed * 1000003u + i);
    s->body[i] = {-15.0f + 2.0f * static_cast<float>(i % 16) + 0.5f * unit(h), 2.0f + 1.5f * static_cast<float>(i / 16),
                  0.0f, 0.0f, 0.0f, 0.0f};
  }
  s->body[0].angle = tilt_radians(st.tilt);
  for (uint32_t p = 0; p < players; ++p)
    s->body[st.crates + p] = {-kHalfWidth + 1.5f + (2 * kHalfWidth - 3.0f) * static_cast<float>(p) /
                                                       static_cast<float>(players),
                              kHeight - 2.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#ifdef CRATES_NAIVE
  rebuild(s);
#endif
  return s;
}

void destroy(lockstep_sim* s) { delete s; }

#ifdef CRATES_NAIVE
// A b2World cannot be copied: the naive module copies a world the way it loads one, through its
// bodies, and so loses what the world hides.
void assign(lockstep_sim* to, const lockstep_sim* from) {
  to->tick = from->tick;
  to->players = from->players;
  to->crates = from->crates;
  to->seed = from->seed;
  std::memcpy(to->body, from->body, sizeof to->body);
  rebuild(to);
}
lockstep_sim* clone(const lockstep_sim* from) {
  auto* s = new (std::nothrow) lockstep_sim{};
  if (s) assign(s, from);
  return s;
}
void step(lockstep_sim* s, const lockstep_frame* f) {
  push(s->live, s, f);
  s->world->Step(kDt, kVelocityIterations, kPositionIterations);
  read_world(s, s->live);
  s->tick = f->tick;
}
#else
lockstep_sim* clone(const lockstep_sim* s) { return new (std::nothrow) lockstep_sim(*s); }
void assign(lockstep_sim* to, const lockstep_sim* from) { *to = *from; }
void step(lockstep_sim* s, const lockstep_frame* f) {
  b2Body* live[kMaxCrates + kMaxPlayers];
  const auto world = build_world(s, live);
  push(live, s, f);
  world->Step(kDt, kVelocityIterations, kPositionIterations);
  read_world(s, live);
  s->tick = f->tick;
}
#endif

uint32_t tick(const lockstep_sim* s) { return s->tick; }

size_t serialized_size(const lockstep_sim* s) { return kHeader + size_t{bodies(s)} * kBodyBytes; }

size_t serialize(const lockstep_sim* s, uint8_t* out, size_t cap) {
  const size_t n = serialized_size(s);
  if (cap < n) return n;
  std::memcpy(out, &s->tick, 4);
  std::memcpy(out + 4, &s->players, 4);
  std::memcpy(out + 8, &s->crates, 4);
  std::memcpy(out + 12, &s->seed, 8);
  std::memcpy(out + kHeader, s->body, size_t{bodies(s)} * kBodyBytes);
  return n;
}

int deserialize(lockstep_sim* s, const uint8_t* b, size_t n) {
  if (n < kHeader) return 0;
  uint32_t tick, players, crates;
  uint64_t seed;
  std::memcpy(&tick, b, 4);
  std::memcpy(&players, b + 4, 4);
  std::memcpy(&crates, b + 8, 4);
  std::memcpy(&seed, b + 12, 8);
  if (players < 1 || players > kMaxPlayers || crates < 1 || crates > kMaxCrates ||
      n != kHeader + size_t{players + crates} * kBodyBytes)
    return 0;
  // Untrusted bytes: a NaN or an infinity would trip Box2D's assertions when stepped.
  for (size_t i = 0; i < size_t{players + crates} * 6; ++i) {
    uint32_t bits;
    std::memcpy(&bits, b + kHeader + 4 * i, 4);
    if ((bits & 0x7f800000u) == 0x7f800000u) return 0;
  }
  s->tick = tick;
  s->players = players;
  s->crates = crates;
  s->seed = seed;
  std::memset(s->body, 0, sizeof s->body);
  std::memcpy(s->body, b + kHeader, size_t{players + crates} * kBodyBytes);
#ifdef CRATES_NAIVE
  rebuild(s);
#endif
  return 1;
}

uint32_t entity_count(const lockstep_sim* s) { return bodies(s); }

uint64_t bits(float v) { return std::bit_cast<uint32_t>(v); }

size_t fields(const lockstep_sim* s, uint32_t e, lockstep_field* out, size_t cap) {
  lockstep_field f[6];
  size_t k = 0;
  if (e == UINT32_MAX) {
    f[k++] = {"tick", 2, s->tick};
  } else if (e < bodies(s)) {
    const BodyState& b = s->body[e];
    f[k++] = {"x", 0, bits(b.x)};
    f[k++] = {"y", 0, bits(b.y)};
    f[k++] = {"angle", 0, bits(b.angle)};
    f[k++] = {"vx", 0, bits(b.vx)};
    f[k++] = {"vy", 0, bits(b.vy)};
    f[k++] = {"w", 0, bits(b.w)};
  }
  if (k <= cap) std::memcpy(out, f, k * sizeof(lockstep_field));
  return k;
}

void perturb(lockstep_sim* s, uint64_t selector) {
  const uint64_t k = selector % (uint64_t{bodies(s)} * 6);
  BodyState& b = s->body[k / 6];
  float* v[] = {&b.x, &b.y, &b.angle, &b.vx, &b.vy, &b.w};
  *v[k % 6] = std::bit_cast<float>(std::bit_cast<uint32_t>(*v[k % 6]) ^ 1u);
#ifdef CRATES_NAIVE
  rebuild(s);
#endif
}

float blend(float a, float b, float alpha) { return a + (b - a) * alpha; }

size_t draw(const lockstep_sim* cur, const lockstep_sim* prev, float alpha, lockstep_shape* out, size_t cap) {
  const size_t n = 3 + size_t{bodies(cur)};
  if (cap < n) return n;
  const lockstep_sim* p = prev->crates == cur->crates && prev->players == cur->players ? prev : cur;
  size_t k = 0;
  // The pen (world y up; the drawing's y down, so y is flipped against kHeight).
  out[k++] = {2, 0.0f, kHeight, 2 * kHalfWidth, kHeight, -1, 7, nullptr};
  out[k++] = {2, 0.0f, 0.0f, 0.0f, kHeight, -1, 7, nullptr};
  out[k++] = {2, 2 * kHalfWidth, 0.0f, 2 * kHalfWidth, kHeight, -1, 7, nullptr};
  for (uint32_t i = 0; i < bodies(cur); ++i) {
    const float x = blend(p->body[i].x, cur->body[i].x, alpha) + kHalfWidth;
    const float y = kHeight - blend(p->body[i].y, cur->body[i].y, alpha);
    if (i < cur->crates) out[k++] = {1, x, y, 2 * kCrateHalf, 2 * kCrateHalf, -1, 2, nullptr};
    else out[k++] = {0, x, y, kDiscRadius, 0, static_cast<int32_t>(i - cur->crates), 0, nullptr};
  }
  return k;
}

float width(const lockstep_sim*) { return 2 * kHalfWidth; }
float height(const lockstep_sim*) { return kHeight; }

void bot(uint64_t seed, uint32_t t, uint8_t* input, const lockstep_command_sink*) {
  const uint64_t h = mix(seed * 7919 + t / 30);
  const uint8_t dirs[] = {0, 1, 255};
  input[0] = dirs[h % 3];
  input[1] = dirs[(h >> 8) % 3];
}

// Keys: bit k of held in the order Up, Down, Left, Right, Space, Enter, A..Z (module_abi.h).
bool held(const lockstep_controls* c, int k) { return (c->held >> k) & 1u; }
constexpr int kUp = 0, kDown = 1, kLeft = 2, kRight = 3, kA = 6;
constexpr int kD = kA + 3, kS = kA + 18, kW = kA + 22;

void from_controls(const lockstep_controls* c, int32_t*, uint8_t* input, const lockstep_command_sink*) {
  const bool left = held(c, kLeft) || held(c, kA), right = held(c, kRight) || held(c, kD);
  const bool up = held(c, kUp) || held(c, kW), down = held(c, kDown) || held(c, kS);
  input[0] = left == right ? 0 : left ? 255 : 1;
  input[1] = up == down ? 0 : up ? 1 : 255;
}

const lockstep_module_v2 kCrates = {
    LOCKSTEP_MODULE_ABI_VERSION,
#ifdef CRATES_NAIVE
    "crates-naive",
#else
    "crates",
#endif
    1,
    LOCKSTEP_BUILD_ID,  // lockstep_add_module derives it from this file and the build settings
    "crates in a pen and a disc per player, on Box2D (an out-of-tree example)",
    "seed=1 (world seed) crates=40 (1..256) tilt=0 (the first crate's starting angle, microradians)",
    "arrows or WASD push your disc",
    2,
    // The golden world starts its first crate at 32.729778 rad, an angle whose cosine glibc's
    // baseline x86-64 cosf rounds one way and its AVX2+FMA cosf the other.
    "seed=20261127,crates=48,tilt=32729778",
    parse_world, settings_text, create, destroy, clone, assign, tick, step, serialize, deserialize,
    entity_count, fields, perturb, draw, width, height, bot, from_controls,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const lockstep_module_v2* lockstep_module(uint32_t host_abi_version) {
  return host_abi_version == LOCKSTEP_MODULE_ABI_VERSION ? &kCrates : nullptr;
}
