// The viewer page (desync_page.hpp): the data is built here from the bundle or replay and the
// module; the page's own script (page_template.html, compiled in) draws it.
#include "lockstep/desync_page.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "lockstep/bytes.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"

namespace lockstep {

namespace {

#include "page_template.inc"  // const char kPageTemplate[]: page_template.html as a string

constexpr std::size_t kMaxShapes = 20000;     // per drawing
constexpr std::size_t kMaxTimeline = 4000;    // hash points per row
constexpr std::size_t kMaxKeyframeViews = 60;
constexpr Tick kInputTicks = 8;               // inputs shown before the tick

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
  Json bits = Json::array();
  for (int i = 63; i >= 0; --i)
    if ((diff >> i) & 1u) bits.push_back(i);
  return Json{{"name", a.name},      {"a_hex", field_hex(a)},         {"a_dec", field_decimal(a)},
              {"b_hex", field_hex(b)}, {"b_dec", field_decimal(b)},      {"a_bits", hash_hex(a.bits)},
              {"b_bits", hash_hex(b.bits)}, {"diff_bits", bits}, {"width", (a.kind == FieldValue::Kind::F32 || a.kind == FieldValue::Kind::U32) ? 32 : 64}};
}

// Where an entity is, from fields named like a position (x/y, px/py, pos_x/pos_y); nullopt when
// it declares none.
std::optional<std::pair<double, double>> entity_position(const Simulation& sim, std::int64_t entity) {
  if (entity < 0 || entity >= static_cast<std::int64_t>(sim.entity_count())) return std::nullopt;
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

Json inputs_json(const Replay& r, Tick from, Tick to) {
  Json out = Json::array();
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const InputFrame& f = r.frames[i];
    if (f.tick < from || f.tick > to) continue;
    Json players = Json::array();
    for (std::uint32_t p = 0; p < f.players && p < r.header.world.players; ++p) {
      std::size_t commands = 0;
      for (const InputFrame::Command& c : f.commands)
        if (c.slot == p) ++commands;
      players.push_back(Json{{"slot", p},
                             {"name", p < r.header.names.size() ? r.header.names[p] : ""},
                             {"present", ((f.present >> p) & 1u) != 0},
                             {"filled", ((f.filled >> p) & 1u) != 0},
                             {"input", bytes_hex(f.input(p))},
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

}  // namespace

Json bundle_page_data(const Module& module, const DesyncBundle& b, const std::string& source) {
  const Replay& r = b.replay;
  Json data{{"kind", "bundle"}, {"source", source}, {"written_by", b.written_by}, {"tick", b.tick},
            {"header", header_json(module, r)}, {"report", b.report}, {"notes", Json::array()}};
  // Each party's hashes, and the reference: the replay's recorded hashes.
  std::vector<std::pair<Tick, std::uint64_t>> reference;
  for (std::size_t i = 0; i < r.frames.size(); ++i) reference.emplace_back(r.frames[i].tick, r.hashes[i]);
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
  data["reference_name"] = "reference (replay)";
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
  data["inputs"] = inputs_json(r, b.tick > kInputTicks ? b.tick - kInputTicks : 0, b.tick);
  // The parties' worlds at the tick, read with the module.
  struct Loaded {
    const BundleParty* party;
    std::unique_ptr<Simulation> sim;
  };
  std::vector<Loaded> loaded;
  const bool ours = r.header.module.empty() || r.header.module == module.name;
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
  if (loaded.size() >= 2) {  // both states: located here, every differing field
    const StateDifference d = locate_difference(*loaded[0].sim, *loaded[1].sim);
    difference = Json{{"where", d.where}, {"entity", d.entity >= 0 ? Json(d.entity) : Json(nullptr)},
                      {"a_name", loaded[0].party->name}, {"b_name", loaded[1].party->name},
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
  data["difference"] = difference;
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
    if (const auto pos = entity_position(*loaded[v].sim, entity))
      views[v]["mark"] = Json::array({pos->first, pos->second});
  data["views"] = views;
  // The commands that take a reader to the tick.
  Json commands = Json::array();
  const std::string sim_opt = ours && module.build_id == 0 ? "--sim " + std::string(module.name)
                                                                         : "--sim-lib LIBRARY";
  commands.push_back("lockstep-replay " + sim_opt + " seek " + quoted(source) + " " + std::to_string(b.tick) +
                     " -o state-" + std::to_string(b.tick) + ".bin");
  const Json& rf = b.report.contains("replay") && b.report["replay"].is_object() ? b.report["replay"] : Json();
  if (const std::string file = text_of(rf, "file", ""); !file.empty())
    commands.push_back("lockstep-replay " + sim_opt + " seek " + quoted(file) + " " + std::to_string(b.tick));
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
  data["inputs"] = inputs_json(r, t > kInputTicks ? t - kInputTicks : 0, t);
  data["commands"] = Json::array({"lockstep-replay seek " + quoted(source) + " TICK -o state.bin",
                                  "lockstep-replay verify " + quoted(source) + " --from TICK"});
  return data;
}

std::string page_html(const Json& data) {
  // The data goes in a <script type="application/json">: JSON text with every '<', '>' and '&'
  // escaped (they occur only inside strings), so no string can close the element or open another.
  std::string text = data.dump(-1, ' ', true, Json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size() + 64);
  for (const char c : text) {
    if (c == '<') safe += "\\u003c";
    else if (c == '>') safe += "\\u003e";
    else if (c == '&') safe += "\\u0026";
    else safe += c;
  }
  std::string page = kPageTemplate;
  const std::string marker = "__LOCKSTEP_DATA__";
  const std::size_t at = page.find(marker);
  page.replace(at, marker.size(), safe);
  return page;
}

std::string bundle_page(const Module& module, const DesyncBundle& b, const std::string& source) {
  return page_html(bundle_page_data(module, b, source));
}

std::string replay_page(const Module& module, const Replay& r, const std::string& source) {
  return page_html(replay_page_data(module, r, source));
}

}  // namespace lockstep
