// Localizing a desync: recent states, block and entity hashes, and the report of tick, entity and
// field (desync.hpp).
#include "lockstep/desync.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "lockstep/state_hash.hpp"

namespace lockstep {

void StateHistory::record(const Simulation& sim) {
  const std::size_t i = sim.tick() % ticks_.size();
  bytes_[i].clear();
  sim.serialize(bytes_[i]);
  ticks_[i] = sim.tick();
}

const std::vector<std::uint8_t>* StateHistory::bytes(Tick tick) const {
  const std::size_t i = tick % ticks_.size();
  if (ticks_[i] == tick) return &bytes_[i];
  for (const Pinned& p : pinned_)
    if (p.tick == tick) return &p.bytes;
  return nullptr;
}

bool StateHistory::load(Tick tick, Simulation& into) const {
  const auto* b = bytes(tick);
  return b != nullptr && into.deserialize(*b);
}

void StateHistory::resize(std::size_t capacity) {
  capacity = std::max<std::size_t>(1, capacity);
  if (capacity == ticks_.size()) return;
  // The held ticks, newest first, go into the new window while they fit.
  std::vector<std::size_t> order(ticks_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    // Empty slots (UINT32_MAX) last; ties broken by slot index for a fixed order.
    const Tick x = ticks_[a] == UINT32_MAX ? 0 : ticks_[a] + 1, y = ticks_[b] == UINT32_MAX ? 0 : ticks_[b] + 1;
    return x != y ? x > y : a < b;
  });
  std::vector<Tick> ticks(capacity, UINT32_MAX);
  std::vector<std::vector<std::uint8_t>> bytes(capacity);
  const Tick newest = ticks_[order[0]];
  for (const std::size_t i : order) {
    const Tick t = ticks_[i];
    if (t == UINT32_MAX || newest - t >= capacity) break;
    ticks[t % capacity] = t;
    bytes[t % capacity] = std::move(bytes_[i]);
  }
  ticks_ = std::move(ticks);
  bytes_ = std::move(bytes);
}

bool StateHistory::pin(Tick tick) {
  for (Pinned& p : pinned_)
    if (p.tick == tick) {
      ++p.count;
      return true;
    }
  const auto* b = bytes(tick);
  if (!b) return false;
  if (pinned_.size() >= kMaxPinned) pinned_.erase(pinned_.begin());
  pinned_.push_back(Pinned{tick, 1, *b});
  return true;
}

void StateHistory::unpin(Tick tick) {
  for (auto it = pinned_.begin(); it != pinned_.end(); ++it)
    if (it->tick == tick) {
      if (--it->count == 0) pinned_.erase(it);
      return;
    }
}

void StateHistory::clear() {
  std::fill(ticks_.begin(), ticks_.end(), UINT32_MAX);
  pinned_.clear();
}

std::size_t history_for_round_trip(std::int64_t rtt_ns, std::size_t minimum, std::size_t maximum) {
  const std::int64_t span_ns = 5 * std::max<std::int64_t>(0, rtt_ns) + 500'000'000;
  const auto ticks = static_cast<std::size_t>((span_ns + kTickNs - 1) / kTickNs);
  return std::clamp(ticks, minimum, std::max(minimum, maximum));
}

std::uint32_t probe_block_size(std::uint32_t entities) {
  const std::uint32_t per512 = (entities + 511) / 512;
  return per512 > 64 ? per512 : 64;
}

std::vector<std::uint64_t> entity_hashes(const Simulation& sim, std::uint32_t first, std::uint32_t count) {
  std::vector<std::uint64_t> out;
  const std::uint32_t n = sim.entity_count();
  for (std::uint32_t e = first; e < n && e - first < count; ++e) out.push_back(sim.entity_hash(e));
  return out;
}

std::vector<std::uint64_t> block_hashes(const Simulation& sim, std::uint32_t block_size) {
  std::vector<std::uint64_t> out;
  const std::uint32_t n = sim.entity_count();
  for (std::uint32_t first = 0; first < n; first += block_size) {
    const auto hs = entity_hashes(sim, first, block_size);
    out.push_back(hash_bytes({reinterpret_cast<const std::uint8_t*>(hs.data()), hs.size() * sizeof(std::uint64_t)}));
  }
  return out;
}

std::vector<std::uint64_t> field_bits(const std::vector<FieldValue>& fields) {
  std::vector<std::uint64_t> out;
  for (const auto& f : fields) out.push_back(f.bits);
  return out;
}

std::uint64_t fields_hash(const std::vector<FieldValue>& fields) {
  const auto bits = field_bits(fields);
  return hash_bytes({reinterpret_cast<const std::uint8_t*>(bits.data()), bits.size() * sizeof(std::uint64_t)});
}

std::int64_t first_difference(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<std::int64_t>(i);
  return a.size() == b.size() ? -1 : static_cast<std::int64_t>(n);
}

namespace {
// The value of a floating-point field, widened to double (exactly: every float is a double).
double float_value(const FieldValue& f) {
  if (f.kind == FieldValue::Kind::F32) {
    float v;
    const auto bits = static_cast<std::uint32_t>(f.bits);
    std::memcpy(&v, &bits, 4);
    return static_cast<double>(v);
  }
  double v;
  std::memcpy(&v, &f.bits, 8);
  return v;
}
bool is_float(const FieldValue& f) { return f.kind == FieldValue::Kind::F32 || f.kind == FieldValue::Kind::F64; }
}  // namespace

StateDifference locate_difference(const Simulation& a, const Simulation& b) {
  StateDifference d;
  std::vector<std::uint8_t> x, y;
  a.serialize(x);
  b.serialize(y);
  d.state_bytes = x.size();
  if (x == y) return d;
  const std::uint32_t n = std::min(a.entity_count(), b.entity_count());
  for (std::uint32_t e = 0; e < n; ++e) {
    if (a.entity_hash(e) == b.entity_hash(e)) continue;
    d.entity = e;
    d.where = "entity";
    const auto fa = a.entity_fields(e), fb = b.entity_fields(e);
    for (std::size_t k = 0; k < fa.size() && k < fb.size(); ++k)
      if (fa[k].bits != fb[k].bits) {
        d.a_fields.push_back(fa[k]);
        d.b_fields.push_back(fb[k]);
      }
    return d;
  }
  if (a.entity_count() != b.entity_count()) {
    d.where = "entity count";
    d.entity = n;
    return d;
  }
  const auto ga = a.global_fields(), gb = b.global_fields();
  for (std::size_t k = 0; k < ga.size() && k < gb.size(); ++k)
    if (ga[k].bits != gb[k].bits) {
      d.a_fields.push_back(ga[k]);
      d.b_fields.push_back(gb[k]);
    }
  if (!d.a_fields.empty()) {
    d.where = "global";
    return d;
  }
  d.where = "outside fields";
  const std::size_t m = std::min(x.size(), y.size());
  std::size_t i = 0;
  while (i < m && x[i] == y[i]) ++i;
  d.byte_offset = static_cast<std::int64_t>(i);
  return d;
}

std::string difference_text(const StateDifference& d) {
  if (d.where == "none") return "";
  if (d.where == "outside fields")
    return "no declared field differs: bytes outside the declared fields (padding, or state no field names) differ "
           "from byte offset " + std::to_string(d.byte_offset) + " of " + std::to_string(d.state_bytes);
  if (d.where == "entity count") return "one state has entity " + std::to_string(d.entity) + ", the other does not";
  std::string out = d.where == "entity" ? "entity " + std::to_string(d.entity) : std::string("global");
  if (d.a_fields.empty()) return out + "'s hash differs but none of its fields does";
  out += " field " + d.a_fields[0].name + ": " + field_hex(d.a_fields[0]) + " vs " + field_hex(d.b_fields[0]);
  if (d.a_fields.size() > 1) out += " (and " + std::to_string(d.a_fields.size() - 1) + " more fields)";
  return out;
}

std::string field_hex(const FieldValue& f) {
  char buf[64];
  if (is_float(f)) std::snprintf(buf, sizeof buf, "%a", float_value(f));
  else std::snprintf(buf, sizeof buf, "0x%" PRIx64, f.bits);
  return buf;
}

std::string field_decimal(const FieldValue& f) {
  char buf[64];
  // 9 significant digits round-trip a float, 17 a double.
  if (is_float(f)) std::snprintf(buf, sizeof buf, f.kind == FieldValue::Kind::F32 ? "%.9g" : "%.17g", float_value(f));
  else std::snprintf(buf, sizeof buf, "%" PRIu64, f.bits);
  return buf;
}

FieldGap field_gap(const FieldValue& a, const FieldValue& b) {
  FieldGap gap;
  char buf[64];
  if (is_float(a) && is_float(b) && a.kind == b.kind) {
    const double d = float_value(b) - float_value(a);
    std::snprintf(buf, sizeof buf, a.kind == FieldValue::Kind::F32 ? "%+.9g" : "%+.17g", d);
    gap.difference = buf;
    if (std::isnan(float_value(a)) || std::isnan(float_value(b))) return gap;
    // Sign and magnitude: the floats of one sign are ordered as their magnitudes' bits.
    const std::uint64_t sign = a.kind == FieldValue::Kind::F32 ? 1ull << 31 : 1ull << 63;
    const std::uint64_t ma = a.bits & (sign - 1), mb = b.bits & (sign - 1);
    gap.ulps = ((a.bits ^ b.bits) & sign) ? ma + mb : (ma > mb ? ma - mb : mb - ma);
    return gap;
  }
  const std::uint64_t x = a.kind == FieldValue::Kind::U32 ? static_cast<std::uint32_t>(a.bits) : a.bits;
  const std::uint64_t y = b.kind == FieldValue::Kind::U32 ? static_cast<std::uint32_t>(b.bits) : b.bits;
  std::snprintf(buf, sizeof buf, "%c%" PRIu64, y >= x ? '+' : '-', y >= x ? y - x : x - y);
  gap.difference = buf;
  return gap;
}

namespace {
Json value_json(const FieldValue& f) {
  char bits[32];
  std::snprintf(bits, sizeof bits, "0x%" PRIx64, f.bits);
  static constexpr const char* kTypes[] = {"f32", "f64", "u32", "u64"};
  return Json{{"hex", field_hex(f)}, {"decimal", field_decimal(f)}, {"bits", bits},
              {"type", kTypes[static_cast<int>(f.kind) & 3]}};
}
}  // namespace

Json difference_json(const StateDifference& d, const char* a_name, const char* b_name) {
  Json fields = Json::array();
  for (std::size_t k = 0; k < d.a_fields.size() && k < d.b_fields.size(); ++k)
    fields.push_back(Json{{"name", d.a_fields[k].name}, {a_name, value_json(d.a_fields[k])}, {b_name, value_json(d.b_fields[k])}});
  Json j{{"where", d.where}, {"fields", fields}};
  j["entity"] = d.entity >= 0 ? Json(d.entity) : Json(nullptr);
  j["byte_offset"] = d.byte_offset >= 0 ? Json(d.byte_offset) : Json(nullptr);
  return j;
}

Json report_json(const DesyncReport& r) {
  Json differing = Json::array();
  for (std::size_t i = 0; i < r.server_fields.size() && i < r.client_fields.size(); ++i)
    differing.push_back(Json{{"field", r.server_fields[i].name},
                             {"server", value_json(r.server_fields[i])},
                             {"client", value_json(r.client_fields[i])}});
  Json votes = Json::array();
  for (const auto& [hash, who] : r.votes) votes.push_back(Json{{"hash", hash_hex(hash)}, {"peers", who}});
  return Json{{"tick", r.tick},
              {"player", r.slot},
              {"name", r.name},
              {"server_hash", hash_hex(r.server_hash)},
              {"client_hash", hash_hex(r.client_hash)},
              {"where", r.where},
              {"entity", r.entity >= 0 ? Json(r.entity) : Json(nullptr)},
              {"field", r.server_fields.empty() ? Json(nullptr) : Json(r.server_fields[0].name)},
              {"server_value", r.server_fields.empty() ? Json(nullptr) : value_json(r.server_fields[0])},
              {"client_value", r.client_fields.empty() ? Json(nullptr) : value_json(r.client_fields[0])},
              {"differing_fields", differing},
              {"replay", {{"file", r.replay_file.empty() ? Json(nullptr) : Json(r.replay_file)}, {"tick", r.tick}}},
              {"bundle", r.bundle_file.empty() ? Json(nullptr) : Json(r.bundle_file)},
              {"odd_one_out", r.odd_one_out.empty() ? Json(nullptr) : Json(r.odd_one_out)},
              {"votes", votes},
              {"probe_bytes", r.probe_bytes},
              {"state_bytes", r.state_bytes},
              {"note", r.note},
              {"collusion", r.collusion},
              {"episode", {{"divergences", r.episode_divergences},
                           {"last_tick", std::max(r.episode_last_tick, r.tick)}}}};
}

std::string write_report(const DesyncReport& r, const std::string& dir, std::string* error) {
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/desync-" + std::to_string(r.tick) + "-" +
                           std::to_string(r.slot) + ".json";
  // A folder of its own (a session of several in one process) is made with its first report.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(errno);
    return "";
  }
  const std::string j = json_text(report_json(r), 2) + "\n";
  std::fwrite(j.data(), 1, j.size(), f);
  std::fclose(f);
  return path;
}

}  // namespace lockstep
