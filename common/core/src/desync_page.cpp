// The viewer page's data (desync_page.hpp), built here from the bundle or replay and the module:
// page_render.cpp draws it as static HTML and SVG, the page's script (page_template.html) steps
// through it.
#include "lockstep/desync_page.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <map>
#include <optional>
#include <set>

#include "lockstep/bytes.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"

namespace lockstep {

namespace {

constexpr std::size_t kMaxShapes = 20000;     // per drawing
constexpr std::size_t kMaxTimeline = 4000;    // hash points per row
constexpr std::size_t kMaxKeyframeViews = 60;
constexpr Tick kInputTicks = 8;               // inputs shown before the tick
constexpr std::size_t kMaxBrowsedEntities = 5000;  // per held tick in the state browser

Json shapes_json(const DrawList& list) {
  Json out = Json::array();
  for (std::size_t i = 0; i < list.size() && i < kMaxShapes; ++i) {
    const DrawShape& s = list[i];
    out.push_back(Json::array({static_cast<int>(s.kind), s.x, s.y, s.a, s.b, s.player, s.palette, s.text}));
  }
  return out;
}

bool same_shape(const DrawShape& a, const DrawShape& b) {
  return a.kind == b.kind && a.x == b.x && a.y == b.y && a.a == b.a && a.b == b.b && a.player == b.player &&
         a.palette == b.palette && a.text == b.text;
}

// A world's drawing: its shapes and size.
Json view_json(const Simulation& sim, const std::string& label, const std::string& party) {
  DrawList list;
  sim.draw(sim, 1.0f, list);
  return Json{{"label", label}, {"party", party}, {"tick", sim.tick()}, {"width", sim.width()},
              {"height", sim.height()}, {"shapes", shapes_json(list)}, {"marked", Json::array()}, {"mark", nullptr}};
}

Json field_json(const FieldValue& a, const FieldValue& b) {
  const std::uint64_t diff = a.bits ^ b.bits;
  const FieldGap gap = field_gap(a, b);
  Json bits = Json::array();
  for (int i = 63; i >= 0; --i)
    if ((diff >> i) & 1u) bits.push_back(i);
  return Json{{"name", a.name},      {"a_hex", field_hex(a)},         {"a_dec", field_decimal(a)},
              {"b_hex", field_hex(b)}, {"b_dec", field_decimal(b)},      {"a_bits", hash_hex(a.bits)},
              {"b_bits", hash_hex(b.bits)}, {"diff_bits", bits}, {"width", (a.kind == FieldValue::Kind::F32 || a.kind == FieldValue::Kind::U32) ? 32 : 64},
              {"difference", gap.difference}, {"ulps", gap.ulps ? Json(*gap.ulps) : Json(nullptr)}};
}

// Where an entity is, from fields named like a position (x/y, px/py, pos_x/pos_y); nullopt when
// it declares none.
std::optional<std::pair<double, double>> entity_position(const Module& module, const Simulation& sim, std::int64_t entity) {
  if (entity < 0 || entity >= static_cast<std::int64_t>(sim.entity_count())) return std::nullopt;
  if (float mx = 0, my = 0; module.entity_position) {
    if (module.entity_position(sim, static_cast<std::uint32_t>(entity), &mx, &my) && std::isfinite(mx) && std::isfinite(my))
      return std::make_pair(double{mx}, double{my});
    return std::nullopt;
  }
  std::optional<double> x, y;
  for (const FieldValue& f : sim.entity_fields(static_cast<std::uint32_t>(entity))) {
    double v = 0;
    if (f.kind == FieldValue::Kind::F32) {
      float fv;
      const auto b = static_cast<std::uint32_t>(f.bits);
      std::memcpy(&fv, &b, 4);
      v = fv;
    } else if (f.kind == FieldValue::Kind::F64) {
      std::memcpy(&v, &f.bits, 8);
    } else {
      continue;
    }
    if (f.name == "x" || f.name == "px" || f.name == "pos_x") x = v;
    if (f.name == "y" || f.name == "py" || f.name == "pos_y") y = v;
  }
  if (x && y && std::isfinite(*x) && std::isfinite(*y)) return std::make_pair(*x, *y);
  return std::nullopt;
}

Json header_json(const Module& module, const Replay& r) {
  Json libs = Json::array();
  for (const LibraryBuild& l : r.header.libraries) libs.push_back(Json{{"name", l.name}, {"build", l.build}});
  const bool ours = r.header.module.empty() || r.header.module == module.name;
  return Json{{"module", r.header.module.empty() ? std::string(module.name) : r.header.module},
              {"settings", ours ? module.settings_text(r.header.world.settings) : bytes_hex(r.header.world.settings)},
              {"players", r.header.world.players},
              {"names", r.header.names},
              {"fingerprint", hash_hex(r.header.fingerprint)},
              {"protocol_version", r.header.protocol_version},
              {"input_delay", r.header.input_delay},
              {"libraries", libs},
              {"viewer", std::string("lockstep ") + kVersion}};
}

// How a page's commands name the game: a built-in module by name, any other as the module's
// file, which the reader puts in place of LIBRARY.
std::string replay_sim_option(const Module& module, bool ours) {
  return ours && module.build_id == 0 ? "--sim " + std::string(module.name) : "--sim-lib LIBRARY";
}

// The inputs of ticks [from, to]: each slot's raw bytes, its commands, and both as the module
// reads them where it says (Module::input_text, command_text).
Json inputs_json(const Module& module, bool ours, const Replay& r, Tick from, Tick to) {
  Json out = Json::array();
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const InputFrame& f = r.frames[i];
    if (f.tick < from || f.tick > to) continue;
    Json players = Json::array();
    for (std::uint32_t p = 0; p < f.players && p < r.header.world.players; ++p) {
      Json commands = Json::array();
      for (const InputFrame::Command& c : f.commands) {
        if (c.slot != p || std::size_t{c.offset} + c.size > f.command_bytes.size()) continue;
        const std::span<const std::uint8_t> bytes(f.command_bytes.data() + c.offset, c.size);
        const std::string text = ours && module.command_text ? module.command_text(bytes) : "";
        commands.push_back(text.empty() ? bytes_hex(bytes) : text);
      }
      const std::string text = ours && module.input_text && f.input_size ? module.input_text(f.input(p)) : "";
      players.push_back(Json{{"slot", p},
                             {"name", p < r.header.names.size() ? r.header.names[p] : ""},
                             {"present", ((f.present >> p) & 1u) != 0},
                             {"filled", ((f.filled >> p) & 1u) != 0},
                             {"input", bytes_hex(f.input(p))},
                             {"text", text},
                             {"commands", commands}});
    }
    out.push_back(Json{{"tick", f.tick}, {"hash", hash_hex(r.hashes[i])}, {"players", players}});
  }
  return out;
}

// At most `limit` points of a row, evenly, always keeping `keep`.
Json timeline(const std::vector<std::pair<Tick, std::uint64_t>>& row, Tick keep) {
  Json out = Json::array();
  const std::size_t step = row.size() > kMaxTimeline ? (row.size() + kMaxTimeline - 1) / kMaxTimeline : 1;
  for (std::size_t i = 0; i < row.size(); ++i)
    if (i % step == 0 || row[i].first == keep || i + 1 == row.size())
      out.push_back(Json::array({row[i].first, hash_hex(row[i].second)}));
  return out;
}

// A shell word: as it is when it is only letters, digits and ./_-, else in single quotes (a file's
// name comes from the file: it must not become a command when the reader pastes the line).
std::string quoted(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '/' ||
           c == '_' || c == '-';
  });
  if (plain && s[0] != '-') return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A member of a JSON object from the file, when it is a string (anything else: `fallback`).
std::string text_of(const Json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

namespace {

// The hash the tick should have had, by the report: a hash a strict majority of the voters gave, or
// in a client's bundle (one voter against the server) the server's. nullopt when the report does
// not say (a split vote, a synctest check).
std::optional<std::uint64_t> agreed_hash(const DesyncBundle& b) {
  const Json& rep = b.report;
  const auto hex = [](const Json& j) { return j.is_string() ? parse_hash_hex(j.get<std::string>()) : std::nullopt; };
  if (b.written_by == "client" && rep.is_object() && rep.contains("server_hash")) return hex(rep["server_hash"]);
  if (!rep.is_object() || !rep.contains("votes") || !rep["votes"].is_array()) return std::nullopt;
  std::size_t voters = 0, best = 0;
  std::optional<std::uint64_t> best_hash;
  for (const Json& v : rep["votes"]) {
    const std::size_t n = v.is_object() && v.contains("peers") && v["peers"].is_array() ? v["peers"].size() : 0;
    voters += n;
    if (n > best && v.contains("hash")) {
      best = n;
      best_hash = hex(v["hash"]);
    }
  }
  return 2 * best > voters ? best_hash : std::nullopt;
}

// The reference's hash at tick t, or nullptr.
const std::uint64_t* reference_at(const std::vector<std::pair<Tick, std::uint64_t>>& reference, Tick t) {
  const auto it = std::lower_bound(reference.begin(), reference.end(), std::pair{t, std::uint64_t{0}},
                                   [](const auto& x, const auto& y) { return x.first < y.first; });
  return it != reference.end() && it->first == t ? &it->second : nullptr;
}

// A field's bits as hex digits, 8 or 16 as wide as the value.
std::string bits_hex(const FieldValue& f) {
  char buf[24];
  if (f.kind == FieldValue::Kind::F32 || f.kind == FieldValue::Kind::U32)
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(f.bits & 0xffffffffu));
  else
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.bits));
  return buf;
}

// Every party's every held state, for the page's state browser: per held tick, the whole state of
// the party holding the reference's hash (else the first that loads) and, of every other party,
// only the entities whose fields differ from it. Values are the fields' bits in hex; the lists of
// field names and the entity kinds are shared through tables. Past kMaxBrowsedEntities a tick's
// tables are cut, and say so.
Json held_states_json(const Module& module, const DesyncBundle& b,
                      const std::vector<std::pair<Tick, std::uint64_t>>& reference, bool ours) {
  Json layouts = Json::array(), kinds = Json::array();
  std::map<std::string, std::size_t> layout_ids, kind_ids;
  const auto layout_of = [&](const std::vector<FieldValue>& fields) {
    static constexpr const char* kTypes[] = {"f32", "f64", "u32", "u64"};
    std::string key;
    Json layout = Json::array();
    for (const FieldValue& f : fields) {
      key += f.name + '\x1f' + kTypes[static_cast<int>(f.kind) & 3] + '\x1e';
      layout.push_back(Json::array({f.name, kTypes[static_cast<int>(f.kind) & 3]}));
    }
    const auto [it, fresh] = layout_ids.emplace(key, layouts.size());
    if (fresh) layouts.push_back(layout);
    return it->second;
  };
  const auto kind_of = [&](const std::string& kind) {
    const auto [it, fresh] = kind_ids.emplace(kind, kinds.size());
    if (fresh) kinds.push_back(kind);
    return it->second;
  };
  const auto values = [](const std::vector<FieldValue>& fields) {
    Json v = Json::array();
    for (const FieldValue& f : fields) v.push_back(bits_hex(f));
    return v;
  };
  std::set<Tick> ticks;
  for (const BundleParty& p : b.parties)
    for (const BundleState& st : p.states) ticks.insert(st.tick);
  Json out = Json::array();
  for (const Tick t : ticks) {
    Json parties = Json::array();
    std::vector<std::pair<std::size_t, std::unique_ptr<Simulation>>> sims;  // (index in parties, state)
    for (std::size_t i = 0; i < b.parties.size(); ++i) {
      const BundleState* st = b.parties[i].state(t);
      if (!st) continue;
      auto sim = ours ? module.create(b.replay.header.world) : nullptr;
      const bool loads = sim && sim->deserialize(st->bytes) && sim->hash() == st->hash;
      parties.push_back(Json{{"party", i}, {"hash", hash_hex(st->hash)}, {"loads", loads}});
      if (loads) sims.emplace_back(parties.size() - 1, std::move(sim));
    }
    Json entry{{"tick", t}, {"parties", parties}};
    if (sims.empty()) {
      out.push_back(entry);
      continue;
    }
    std::size_t ref = 0;
    if (const std::uint64_t* want = b.written_by == "synctest" ? nullptr : reference_at(reference, t))
      for (std::size_t k = 0; k < sims.size(); ++k)
        if (sims[k].second->hash() == *want) {
          ref = k;
          break;
        }
    const Simulation& r = *sims[ref].second;
    const std::uint32_t n = r.entity_count();
    const std::uint32_t shown = static_cast<std::uint32_t>(std::min<std::size_t>(n, kMaxBrowsedEntities));
    Json layout = Json::array(), kind = Json::array(), rows = Json::array();
    for (std::uint32_t e = 0; e < shown; ++e) {
      const std::vector<FieldValue> fields = r.entity_fields(e);
      layout.push_back(layout_of(fields));
      kind.push_back(kind_of(module.entity_kind ? module.entity_kind(r, e) : ""));
      rows.push_back(values(fields));
    }
    const std::vector<FieldValue> global = r.global_fields();
    entry["reference"] = sims[ref].first;
    entry["entities"] = n;
    entry["cut"] = n > shown;
    entry["global"] = Json{{"layout", layout_of(global)}, {"values", values(global)}};
    entry["layout"] = layout;
    entry["kind"] = kind;
    entry["values"] = rows;
    for (std::size_t k = 0; k < sims.size(); ++k) {
      if (k == ref) continue;
      const Simulation& o = *sims[k].second;
      Json differs = Json::array();  // [entity (-1: the global fields), layout, values]
      if (const std::vector<FieldValue> g = o.global_fields(); values(g) != entry["global"]["values"])
        differs.push_back(Json::array({-1, layout_of(g), values(g)}));
      const std::uint32_t m = o.entity_count();
      const std::uint32_t upto = static_cast<std::uint32_t>(std::min<std::size_t>(std::max(n, m), kMaxBrowsedEntities));
      for (std::uint32_t e = 0; e < upto; ++e) {
        if (e < n && e < m && r.entity_hash(e) == o.entity_hash(e)) continue;
        if (e >= m) {
          differs.push_back(Json::array({e, nullptr, nullptr}));  // the reference has it, this one not
          continue;
        }
        const std::vector<FieldValue> fields = o.entity_fields(e);
        differs.push_back(Json::array({e, layout_of(fields), values(fields)}));
      }
      entry["parties"][sims[k].first]["entities"] = m;
      entry["parties"][sims[k].first]["differs"] = differs;
    }
    out.push_back(entry);
  }
  return Json{{"layouts", layouts}, {"kinds", kinds}, {"ticks", out}, {"limit", kMaxBrowsedEntities}};
}

}  // namespace

Json bundle_page_data(const Module& module, const DesyncBundle& b, const std::string& source, const Replay* session) {
  const Replay& r = b.replay;
  const bool ours = r.header.module.empty() || r.header.module == module.name;
  Json data{{"kind", "bundle"}, {"source", source}, {"written_by", b.written_by}, {"tick", b.tick},
            {"header", header_json(module, r)}, {"report", b.report}, {"notes", Json::array()}};
  // Each party's hashes, and the reference: the replay's recorded hashes, and with the session's
  // replay every tick of the session (the bundle's where the two hold the same tick).
  std::map<Tick, std::uint64_t> recorded;
  if (session)
    for (std::size_t i = 0; i < session->frames.size() && i < session->hashes.size(); ++i) recorded[session->frames[i].tick] = session->hashes[i];
  for (std::size_t i = 0; i < r.frames.size(); ++i) recorded[r.frames[i].tick] = r.hashes[i];
  std::vector<std::pair<Tick, std::uint64_t>> reference(recorded.begin(), recorded.end());
  Json parties = Json::array();
  for (const BundleParty& p : b.parties) {
    Json states = Json::array();
    for (const BundleState& s : p.states) states.push_back(Json{{"tick", s.tick}, {"hash", hash_hex(s.hash)}, {"bytes", s.bytes.size()}});
    parties.push_back(Json{{"name", p.name}, {"hashes", timeline(p.hashes, b.tick)}, {"states", states}});
  }
  data["parties"] = parties;
  // The replay holds its writer's hashes: a client's own, or a server that was itself outvoted. At
  // the divergent tick the reference is what the majority (or, in a client's bundle, the server)
  // had, so that the majority is never drawn as the wrong side.
  data["reference_name"] = session ? "reference (the session's replay)" : "reference (replay)";
  if (const auto agreed = agreed_hash(b)) {
    auto at = std::find_if(reference.begin(), reference.end(), [&](const auto& p) { return p.first == b.tick; });
    if (at == reference.end()) at = reference.insert(std::upper_bound(reference.begin(), reference.end(), std::pair{b.tick, std::uint64_t{0}},
                                                                      [](const auto& x, const auto& y) { return x.first < y.first; }),
                                                     {b.tick, *agreed});
    if (at->second != *agreed) {
      at->second = *agreed;
      data["reference_name"] = b.written_by == "client" ? "reference (the server at the tick)" : "reference (the majority at the tick)";
    }
  }
  data["reference"] = timeline(reference, b.tick);
  data["states"] = held_states_json(module, b, reference, ours);
  data["inputs"] = inputs_json(module, ours, r, b.tick > kInputTicks ? b.tick - kInputTicks : 0, b.tick);
  // The parties' worlds at the tick, read with the module.
  struct Loaded {
    const BundleParty* party;
    std::unique_ptr<Simulation> sim;
  };
  std::vector<Loaded> loaded;
  for (const BundleParty& p : b.parties) {
    const BundleState* s = p.state(b.tick);
    if (!s) continue;
    auto sim = ours ? module.create(r.header.world) : nullptr;
    if (!sim || !sim->deserialize(s->bytes) || sim->hash() != s->hash) {
      data["notes"].push_back("the state of " + p.name + " at tick " + std::to_string(b.tick) + " does not load into the " +
                              std::string(module.name) + " module: its drawing and fields are left out");
      continue;
    }
    loaded.push_back({&p, std::move(sim)});
  }
  const Json entity_of = b.report.contains("entity") && b.report["entity"].is_number_integer() ? b.report["entity"] : Json(nullptr);
  Json difference{{"where", text_of(b.report, "where", "unknown")},
                  {"entity", entity_of},
                  {"a_name", "server"},
                  {"b_name", text_of(b.report, "name", "client")},
                  {"fields", Json::array()},
                  {"from", "report"}};
  // The two the page sets side by side: the party that holds the reference's hash (else the first),
  // and the first whose state differs from it (else the next).
  // A synctest's bundle holds the check's own first run first: the second is held against it.
  const bool first_is_reference = b.written_by == "synctest";
  std::size_t ref = 0, odd = loaded.size() > 1 ? 1 : 0;
  if (const std::uint64_t* want = first_is_reference ? nullptr : reference_at(reference, b.tick)) {
    for (std::size_t i = 0; i < loaded.size(); ++i)
      if (loaded[i].sim->hash() == *want) {
        ref = i;
        break;
      }
  }
  for (std::size_t i = 0; i < loaded.size(); ++i)
    if (i != ref && loaded[i].sim->hash() != loaded[ref].sim->hash()) {
      odd = i;
      break;
    }
  if (odd == ref && loaded.size() > 1) odd = ref == 0 ? 1 : 0;
  if (loaded.size() >= 2) {  // both states: located here, every differing field
    const StateDifference d = locate_difference(*loaded[ref].sim, *loaded[odd].sim);
    difference = Json{{"where", d.where}, {"entity", d.entity >= 0 ? Json(d.entity) : Json(nullptr)},
                      {"a_name", loaded[ref].party->name}, {"b_name", loaded[odd].party->name},
                      {"fields", Json::array()}, {"from", "states"},
                      {"byte_offset", d.byte_offset >= 0 ? Json(d.byte_offset) : Json(nullptr)}};
    for (std::size_t k = 0; k < d.a_fields.size() && k < d.b_fields.size(); ++k)
      difference["fields"].push_back(field_json(d.a_fields[k], d.b_fields[k]));
  } else if (b.report.contains("differing_fields") && b.report["differing_fields"].is_array()) {  // the probe's
    for (const Json& f : b.report["differing_fields"]) {
      if (!f.is_object() || !f.contains("server") || !f.contains("client") || !f["server"].is_object() ||
          !f["client"].is_object())
        continue;
      const auto value = [&](const Json& v) {
        FieldValue fv;
        fv.name = text_of(f, "field", "?");
        const std::string kind = text_of(v, "type", "f32");
        fv.kind = kind == "f64" ? FieldValue::Kind::F64 : kind == "u32" ? FieldValue::Kind::U32
                  : kind == "u64" ? FieldValue::Kind::U64 : FieldValue::Kind::F32;
        fv.bits = std::strtoull(text_of(v, "bits", "0").c_str(), nullptr, 16);  // "0x..." too
        return fv;
      };
      difference["fields"].push_back(field_json(value(f["server"]), value(f["client"])));
    }
  }
  // A field the report names without values (a synctest check's): named all the same.
  if (difference["fields"].empty() && !text_of(b.report, "field", "").empty())
    difference["field_name"] = text_of(b.report, "field", "");
  if (difference["entity"].is_number_integer() && module.entity_kind && !loaded.empty()) {
    const std::int64_t e = difference["entity"].get<std::int64_t>();
    if (e >= 0 && e < static_cast<std::int64_t>(loaded[ref].sim->entity_count()))
      difference["entity_kind"] = module.entity_kind(*loaded[ref].sim, static_cast<std::uint32_t>(e));
  }
  data["difference"] = difference;
  data["sides"] = loaded.size() >= 2 ? Json::array({loaded[ref].party - b.parties.data(), loaded[odd].party - b.parties.data()}) : Json::array();
  // The drawings, the differing entity marked: shapes that differ between the two, else where the
  // entity's position fields put it.
  Json views = Json::array();
  std::vector<DrawList> lists;
  for (const Loaded& l : loaded) {
    views.push_back(view_json(*l.sim, l.party->name + " at tick " + std::to_string(b.tick), l.party->name));
    lists.emplace_back();
    l.sim->draw(*l.sim, 1.0f, lists.back());
  }
  if (lists.size() >= 2) {
    for (std::size_t i = 0; i < lists[0].size() && i < lists[1].size() && i < kMaxShapes; ++i)
      if (!same_shape(lists[0][i], lists[1][i])) {
        views[0]["marked"].push_back(i);
        views[1]["marked"].push_back(i);
      }
  }
  const std::int64_t entity = difference["entity"].is_number_integer() ? difference["entity"].get<std::int64_t>() : -1;
  for (std::size_t v = 0; v < loaded.size(); ++v)
    if (const auto pos = entity_position(module, *loaded[v].sim, entity))
      views[v]["mark"] = Json::array({pos->first, pos->second});
  data["views"] = views;
  // The commands that take a reader to the tick, each one that runs as written (with LIBRARY the
  // module's file, when it is not built in): the state re-simulated from the bundle's start when it
  // has one (a relay server's has none), each of the two parties' stored states, and the two compared.
  Json commands = Json::array();
  const std::string sim_opt = replay_sim_option(module, ours);
  const std::string tick = std::to_string(b.tick);
  const bool runnable = r.header.start_tick == 0 ||
      std::any_of(r.keyframes.begin(), r.keyframes.end(), [&](const ReplayKeyframe& k) { return k.tick == r.header.start_tick; });
  if (runnable)
    commands.push_back("lockstep-replay " + sim_opt + " seek " + quoted(source) + " " + tick + " -o state-" + tick + ".bin");
  std::vector<std::string> stored;
  for (std::size_t i = 0; i < b.parties.size(); ++i) {
    const bool side = !loaded.empty() && (b.parties.data() + i == loaded[ref].party || b.parties.data() + i == loaded[odd].party);
    if (!b.parties[i].state(b.tick) || (!loaded.empty() && !side) || stored.size() == 2) continue;
    stored.push_back("party" + std::to_string(i) + "-" + tick + ".state");
    commands.push_back("lockstep-replay seek " + quoted(source) + " " + tick + " --party " + std::to_string(i) + " -o " + stored.back());
  }
  if (stored.size() == 2)
    commands.push_back("lockstep-replay " + sim_opt + " compare " + quoted(source) + " " + stored[0] + " --with " + stored[1]);
  const Json& rf = b.report.contains("replay") && b.report["replay"].is_object() ? b.report["replay"] : Json();
  if (const std::string file = text_of(rf, "file", ""); !file.empty())
    commands.push_back("lockstep-replay " + sim_opt + " seek " + quoted(file) + " " + tick);
  data["commands"] = commands;
  return data;
}

Json replay_page_data(const Module& module, const Replay& r, const std::string& source) {
  Json data{{"kind", "replay"}, {"source", source}, {"tick", r.last_tick}, {"header", header_json(module, r)},
            {"notes", Json::array()}, {"parties", Json::array()}, {"inputs", Json::array()}};
  std::vector<std::pair<Tick, std::uint64_t>> reference;
  for (std::size_t i = 0; i < r.frames.size(); ++i) reference.emplace_back(r.frames[i].tick, r.hashes[i]);
  data["reference"] = timeline(reference, 0);
  data["complete"] = r.complete;
  data["end_reason"] = r.end_reason;
  // A drawing at each keyframe (evenly, at most kMaxKeyframeViews), and of the last tick.
  Json views = Json::array();
  const bool ours = r.header.module.empty() || r.header.module == module.name;
  const std::size_t n = r.keyframes.size();
  const std::size_t step = n > kMaxKeyframeViews ? (n + kMaxKeyframeViews - 1) / kMaxKeyframeViews : 1;
  for (std::size_t i = 0; ours && i < n; i += step) {
    auto sim = module.create(r.header.world);
    if (!sim || !sim->deserialize(r.keyframes[i].state)) continue;
    views.push_back(view_json(*sim, "keyframe of tick " + std::to_string(r.keyframes[i].tick), ""));
  }
  if (views.empty()) data["notes"].push_back(n == 0 ? "this replay has no keyframes to draw (recorded with --keyframe-every 0, or format 3)"
                                                    : "the keyframes do not load into the " + std::string(module.name) + " module");
  data["views"] = views;
  data["keyframes"] = r.keyframe_ticks;
  const Tick t = r.last_tick;
  data["inputs"] = inputs_json(module, ours, r, t > kInputTicks ? t - kInputTicks : 0, t);
  // Runnable as written: the state of the last tick, and a check from the last keyframe (any tick
  // works in place of these).
  const std::string sim_opt = replay_sim_option(module, ours);
  const std::string last = std::to_string(t);
  Json commands = Json::array({"lockstep-replay " + sim_opt + " seek " + quoted(source) + " " + last + " -o state-" + last + ".bin"});
  if (!r.keyframe_ticks.empty())
    commands.push_back("lockstep-replay " + sim_opt + " verify " + quoted(source) + " --from " + std::to_string(r.keyframe_ticks.back()));
  else
    commands.push_back("lockstep-replay " + sim_opt + " verify " + quoted(source));
  data["commands"] = commands;
  return data;
}

std::string bundle_page(const Module& module, const DesyncBundle& b, const std::string& source, const Replay* session) {
  return page_html(bundle_page_data(module, b, source, session));
}

std::string replay_page(const Module& module, const Replay& r, const std::string& source) {
  return page_html(replay_page_data(module, r, source));
}

}  // namespace lockstep
