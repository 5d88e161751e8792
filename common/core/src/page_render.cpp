// The viewer page's HTML (desync_page.hpp's page_html): everything a reader needs drawn on the server
// side as static HTML and SVG, so that the page reads where no script may run (a CI server's
// Content-Security-Policy); the page's script (page_template.html) only adds the controls that step
// through ticks, parties and keyframes. Reads the data bundle_page_data and replay_page_data build.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/desync_page.hpp"

namespace lockstep {

namespace {

#include "page_template.inc"  // const char kPageTemplate[]: page_template.html as a string

constexpr std::size_t kStaticEntities = 50;  // entities listed in the static table (the script pages on)
constexpr const char* kPlayer[] = {"#50aaff", "#ffc828", "#ff7ac0", "#7fdc88", "#c08cff", "#ff9a50", "#50e0d0", "#e0e060"};
constexpr const char* kPalette[] = {"#96a0af", "#ffffff", "#e6463c", "#50c85a", "#f0dc3c", "#3cd2dc", "#d250c8", "#5a5a6e"};

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A member as text, whatever its type (strings as they are, numbers and the rest as JSON, absent "").
std::string str(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', true, Json::error_handler_t::replace);
}
std::string text(const Json& j) { return j.is_string() ? j.get<std::string>() : j.is_null() ? "" : j.dump(-1, ' ', true, Json::error_handler_t::replace); }
const Json& member(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::int64_t integer(const Json& j, std::int64_t fallback = -1) { return j.is_number_integer() ? j.get<std::int64_t>() : fallback; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A table: head cells as text, body cells as HTML already escaped.
std::string table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows, const char* id = nullptr) {
  std::string t = id ? "<table id=\"" + std::string(id) + "\"><tr>" : "<table><tr>";
  for (const std::string& h : head) t += "<th>" + esc(h) + "</th>";
  t += "</tr>\n";
  for (const auto& r : rows) {
    t += "<tr>";
    for (const std::string& c : r) t += "<td>" + c + "</td>";
    t += "</tr>\n";
  }
  return t + "</table>\n";
}
std::string mono(const std::string& s, const char* cls = "") { return "<span class=\"mono " + std::string(cls) + "\">" + esc(s) + "</span>"; }

// One field's value as the page writes it: hex and decimal.
FieldValue field_of(const std::string& type, const std::string& hex) {
  FieldValue f;
  f.kind = type == "f64" ? FieldValue::Kind::F64 : type == "u32" ? FieldValue::Kind::U32 : type == "u64" ? FieldValue::Kind::U64 : FieldValue::Kind::F32;
  f.bits = std::strtoull(hex.c_str(), nullptr, 16);
  return f;
}

std::string bit_strip(int width, const std::string& bits_hex, const Json& diff_bits) {
  const std::uint64_t v = std::strtoull(bits_hex.c_str(), nullptr, 16);
  std::set<int> d;
  if (diff_bits.is_array())
    for (const Json& b : diff_bits) d.insert(static_cast<int>(integer(b, -1)));
  std::string s = "<div class=\"bits\">";
  for (int i = width - 1; i >= 0; --i)
    s += d.count(i) ? "<span class=\"diff\" title=\"bit " + std::to_string(i) + " differs\">!</span>"
         : ((v >> i) & 1u) ? "<span class=\"on\">1</span>" : "<span>0</span>";
  return s + "</div>";
}

// ---- the world, as SVG in world units ----

bool has_mark(const Json& view) {
  const Json& m = member(view, "mark");
  return m.is_array() && m.size() == 2 && m[0].is_number() && m[1].is_number();
}

// One drawing as a figure; `drawn` counts its shapes.
std::string draw_view(const Json& view, int size, bool hidden, std::size_t index, std::size_t* drawn) {
  const auto dim = [&](const char* k) { return member(view, k).is_number() ? std::max(1e-6, member(view, k).get<double>()) : 1.0; };
  const double w = dim("width"), h = dim("height");
  const double scale = std::min(size / w, size / h);
  const double px = 1.0 / scale;  // one screen pixel in world units
  std::set<std::int64_t> marked;
  if (member(view, "marked").is_array())
    for (const Json& m : member(view, "marked")) marked.insert(integer(m));
  std::string s = "<figure class=\"view\" data-index=\"" + std::to_string(index) + "\"" + (hidden ? " hidden" : "") + ">";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(w) + " " + num(h) + "\" width=\"" + num(w * scale) +
       "\" height=\"" + num(h * scale) + "\" role=\"img\"><rect width=\"" + num(w) + "\" height=\"" + num(h) + "\" fill=\"#0b0c10\"/>";
  std::string marks;
  std::size_t at = 0;
  for (const Json& shape : member(view, "shapes")) {
    const std::size_t i = at++;
    if (!shape.is_array() || shape.size() < 8) continue;
    const auto f = [&](std::size_t k) { return shape[k].is_number() ? shape[k].get<double>() : 0.0; };
    const std::int64_t kind = integer(shape[0], 0), player = integer(shape[5], -1), palette = integer(shape[6], 0);
    const std::string colour = player >= 0 ? kPlayer[player % 8] : kPalette[((palette % 8) + 8) % 8];
    const double x = f(1), y = f(2), a = f(3), b = f(4);
    if (kind == 0)
      s += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(std::max(a, px)) + "\" fill=\"" + colour + "\"/>";
    else if (kind == 1)
      s += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(a, px)) + "\" height=\"" + num(std::max(b, px)) +
           "\" fill=\"" + colour + "\"/>";
    else if (kind == 2)
      s += "<line x1=\"" + num(x) + "\" y1=\"" + num(y) + "\" x2=\"" + num(a) + "\" y2=\"" + num(b) + "\" stroke=\"" + colour +
           "\" stroke-width=\"" + num(px) + "\"/>";
    else if (kind == 3)
      s += "<text x=\"" + num(x) + "\" y=\"" + num(y + a) + "\" font-size=\"" + num(std::max(a, 8 * px)) + "\" font-family=\"monospace\" fill=\"" +
           colour + "\">" + esc(text(shape[7])) + "</text>";
    else
      continue;
    ++*drawn;
    if (marked.count(static_cast<std::int64_t>(i)))
      marks += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num((kind == 0 ? a : 0) + 6 * px) + "\"/>";
  }
  // The marks over everything drawn.
  if (!marks.empty()) s += "<g class=\"mark\" fill=\"none\" stroke=\"#ff3df0\" stroke-width=\"" + num(2 * px) + "\">" + marks + "</g>";
  if (has_mark(view)) {
    const double mx = member(view, "mark")[0].get<double>(), my = member(view, "mark")[1].get<double>();
    const auto p = [&](double dx, double dy) { return num(mx + dx * px) + " " + num(my + dy * px); };
    s += "<g class=\"mark\" fill=\"none\" stroke=\"#ff3df0\" stroke-width=\"" + num(2 * px) + "\"><circle cx=\"" + num(mx) + "\" cy=\"" + num(my) +
         "\" r=\"" + num(12 * px) + "\"/><path d=\"M" + p(-18, 0) + "L" + p(-12, 0) + "M" + p(12, 0) + "L" + p(18, 0) + "M" + p(0, -18) + "L" +
         p(0, -12) + "M" + p(0, 12) + "L" + p(0, 18) + "\"/></g>";
  }
  s += "</svg><figcaption>" + esc(str(view, "label")) + (!marked.empty() || has_mark(view) ? " · the differing entity is circled" : "") +
       "</figcaption></figure>\n";
  return s;
}

// ---- the timeline: a row per party, its agreement with the reference, the votes of each tick ----

struct Row {
  std::string name;
  std::vector<std::pair<std::int64_t, std::string>> points;
};

std::vector<std::pair<std::int64_t, std::string>> points_of(const Json& j) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  if (!j.is_array()) return out;
  for (const Json& p : j)
    if (p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_string()) out.emplace_back(p[0].get<std::int64_t>(), p[1].get<std::string>());
  return out;
}

std::string timeline_section(const Json& data, bool bundle) {
  std::vector<Row> rows;
  rows.push_back({bundle ? (str(data, "reference_name").empty() ? "reference (replay)" : str(data, "reference_name")) : "recorded",
                  points_of(member(data, "reference"))});
  if (member(data, "parties").is_array())
    for (const Json& p : member(data, "parties")) rows.push_back({str(p, "name"), points_of(member(p, "hashes"))});
  // What each row is held against, per tick: the reference row; in a synctest's bundle the check's
  // first run (the two runs of one check are what must agree); where the reference has no hash,
  // the first party's.
  const bool synctest = str(data, "written_by") == "synctest" && rows.size() > 2;
  std::map<std::int64_t, std::string> ref;
  for (const auto& [t, h] : (synctest ? rows[1] : rows[0]).points) ref[t] = h;
  if (rows.size() > 1)
    for (const auto& [t, h] : rows[synctest ? 0 : 1].points) ref.emplace(t, h);
  const std::size_t against = synctest ? 1 : 0;
  const std::int64_t tick = integer(member(data, "tick"), 0);
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Row& r : rows)
    for (const auto& p : r.points) lo = std::min(lo, p.first), hi = std::max(hi, p.first);
  if (lo > hi) lo = hi = tick;
  if (bundle) lo = std::min(lo, tick), hi = std::max(hi, tick);
  constexpr int kW = 1200, kLeft = 170, kRowH = 18;
  const int height = static_cast<int>(rows.size()) * kRowH + 26;
  const auto x = [&](std::int64_t t) {
    return hi == lo ? kLeft + (kW - kLeft) / 2.0 : kLeft + static_cast<double>(t - lo) / static_cast<double>(hi - lo) * (kW - kLeft - 10);
  };
  const double col = std::max(2.0, (kW - kLeft - 10) / static_cast<double>(hi - lo + 1));
  std::string s = "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(kW) + " " + std::to_string(height) +
                  "\" width=\"100%\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\"><rect width=\"" + std::to_string(kW) +
                  "\" height=\"" + std::to_string(height) + "\" fill=\"#0b0c10\"/>";
  // The divergent tick's line under everything, so that it never hides a row's own mark.
  if (bundle) s += "<rect x=\"" + num(x(tick) - 1) + "\" y=\"0\" width=\"3\" height=\"" + std::to_string(height - 20) + "\" fill=\"#f0d850\"/>";
  struct Summary { std::size_t agree = 0, differ = 0, unknown = 0; std::int64_t first = -1; };
  std::vector<Summary> summary(rows.size());
  std::string firsts;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int y = static_cast<int>(i) * kRowH + 4;
    s += "<text x=\"6\" y=\"" + std::to_string(y + 12) + "\" fill=\"#aeb6c6\">" + esc(rows[i].name.substr(0, 24)) + "</text>";
    for (const auto& [t, h] : rows[i].points) {
      const auto it = ref.find(t);
      const bool self = i == against;
      const char* colour = self ? "#50c85a" : it == ref.end() ? "#5a5a6e" : it->second == h ? "#50c85a" : "#e6463c";
      Summary& m = summary[i];
      if (self || (it != ref.end() && it->second == h)) ++m.agree;
      else if (it == ref.end()) ++m.unknown;
      else {
        ++m.differ;
        if (m.first < 0) m.first = t;
      }
      s += "<rect x=\"" + num(x(t) - 1) + "\" y=\"" + std::to_string(y + 2) + "\" width=\"3\" height=\"" + std::to_string(kRowH - 6) + "\" fill=\"" + colour + "\"/>";
    }
    // The row's first divergent tick, drawn after every other mark: a red bar with a white edge
    // and a pointer above it.
    if (summary[i].first >= 0) {
      const double fx = x(summary[i].first);
      firsts += "<g class=\"first-divergent\"><rect x=\"" + num(fx - 3) + "\" y=\"" + std::to_string(y) + "\" width=\"6\" height=\"" +
                std::to_string(kRowH - 2) + "\" fill=\"#ff2d20\" stroke=\"#ffffff\" stroke-width=\"1.5\"/><title>" + esc(rows[i].name) +
                ": first differs at tick " + std::to_string(summary[i].first) + "</title></g>";
    }
  }
  s += firsts;
  // Hover: each tick's votes, every party's hash grouped.
  std::map<std::int64_t, std::map<std::string, std::vector<std::string>>> votes;
  for (std::size_t i = 1; i < rows.size(); ++i)
    for (const auto& [t, h] : rows[i].points) votes[t][h].push_back(rows[i].name);
  if (votes.size() <= 8192)
    for (const auto& [t, groups] : votes) {
      std::string title = "tick " + std::to_string(t);
      for (const auto& [h, who] : groups) {
        title += "\n" + h + ": ";
        for (std::size_t k = 0; k < who.size(); ++k) title += (k ? ", " : "") + who[k];
      }
      if (const auto it = ref.find(t); it != ref.end()) title += "\n(reference " + it->second + ")";
      s += "<rect class=\"vote\" x=\"" + num(x(t) - col / 2) + "\" y=\"0\" width=\"" + num(col) + "\" height=\"" + std::to_string(height - 20) +
           "\" fill=\"#ffffff\" fill-opacity=\"0\"><title>" + esc(title) + "</title></rect>";
    }
  s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(height - 5) + "\" fill=\"#9aa3b5\">" + std::to_string(lo) + "</text>";
  if (!bundle || x(hi) - x(tick) > 90)  // else the divergent tick's label stands there
    s += "<text x=\"" + std::to_string(kW - 10) + "\" y=\"" + std::to_string(height - 5) + "\" fill=\"#9aa3b5\" text-anchor=\"end\">" + std::to_string(hi) + "</text>";
  if (bundle)
    s += "<text x=\"" + num(std::min(x(tick), kW - 40.0)) + "\" y=\"" + std::to_string(height - 5) + "\" fill=\"#f0d850\" text-anchor=\"middle\">tick " +
         std::to_string(tick) + "</text>";
  s += "</svg>\n";
  // The same in words: each row's agreement over the window.
  std::vector<std::vector<std::string>> body;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Summary& m = summary[i];
    body.push_back({esc(rows[i].name), std::to_string(rows[i].points.size()),
                    i == against ? "(the reference)" : std::to_string(m.agree), i == against ? "" : std::to_string(m.differ),
                    m.first >= 0 ? "<span class=\"bad\">tick " + std::to_string(m.first) + "</span>" : (i == against ? "" : "never")});
  }
  s += table({"row", "ticks held", "agree", "differ", "first differs"}, body, "agreement");
  // The hashes around the tick, side by side.
  std::vector<std::vector<std::string>> near;
  for (std::int64_t t = std::max(lo, tick - 5); t <= tick + 1 && t <= hi; ++t) {
    std::vector<std::string> r{std::to_string(t)};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto it = std::find_if(rows[i].points.begin(), rows[i].points.end(), [&](const auto& p) { return p.first == t; });
      if (it == rows[i].points.end()) { r.push_back("<span class=\"dim\">-</span>"); continue; }
      const auto want = ref.find(t);
      const bool bad = i != against && want != ref.end() && want->second != it->second;
      r.push_back(mono(it->second + (bad ? " ≠" : ""), bad ? "bad" : want != ref.end() ? "good" : ""));
    }
    near.push_back(r);
  }
  std::vector<std::string> head{"tick"};
  for (const Row& r : rows) head.push_back(r.name);
  if (!near.empty()) s += table(head, near, "hash-table");
  return s;
}

// ---- the states ----

// The static view of one party's state at one tick against the reference's (the script redraws
// this for the tick and party a reader picks).
std::string state_view(const Json& data, std::int64_t tick, std::int64_t party) {
  const Json& S = member(data, "states");
  const Json* entry = nullptr;
  if (member(S, "ticks").is_array())
    for (const Json& e : member(S, "ticks"))
      if (integer(member(e, "tick")) == tick) entry = &e;
  if (!entry || !member(*entry, "values").is_array()) return "<p class=\"dim\">no state of tick " + std::to_string(tick) + " loads here</p>";
  const Json& layouts = member(S, "layouts");
  const Json& kinds = member(S, "kinds");
  const auto party_name = [&](std::int64_t index) {
    const Json& parties = member(data, "parties");
    return parties.is_array() && index >= 0 && static_cast<std::size_t>(index) < parties.size() ? str(parties[static_cast<std::size_t>(index)], "name") : "?";
  };
  const Json* mine = nullptr;
  std::int64_t ref_party = -1;
  for (const Json& p : member(*entry, "parties")) {
    if (integer(member(p, "party")) == party) mine = &p;
  }
  const std::int64_t ref_index = integer(member(*entry, "reference"), 0);
  if (member(*entry, "parties").is_array() && ref_index >= 0 && static_cast<std::size_t>(ref_index) < member(*entry, "parties").size())
    ref_party = integer(member(member(*entry, "parties")[static_cast<std::size_t>(ref_index)], "party"));
  const bool is_ref = party == ref_party;
  std::map<std::int64_t, const Json*> differs;  // entity -> [entity, layout, values]
  if (mine && member(*mine, "differs").is_array())
    for (const Json& d : member(*mine, "differs"))
      if (d.is_array() && d.size() == 3) differs[integer(d[0])] = &d;
  const auto layout = [&](const Json& id) -> const Json& {
    static const Json kEmpty = Json::array();
    const std::int64_t k = integer(id);
    return layouts.is_array() && k >= 0 && static_cast<std::size_t>(k) < layouts.size() ? layouts[static_cast<std::size_t>(k)] : kEmpty;
  };
  const auto kind_of = [&](std::int64_t e) {
    const Json& k = member(*entry, "kind");
    if (e < 0) return std::string("global");
    if (!k.is_array() || static_cast<std::size_t>(e) >= k.size()) return std::string();
    const std::int64_t id = integer(k[static_cast<std::size_t>(e)]);
    return kinds.is_array() && id >= 0 && static_cast<std::size_t>(id) < kinds.size() ? text(kinds[static_cast<std::size_t>(id)]) : std::string();
  };
  const auto ref_values = [&](std::int64_t e) -> std::pair<const Json*, const Json*> {  // layout id, values
    if (e < 0) return {&member(member(*entry, "global"), "layout"), &member(member(*entry, "global"), "values")};
    const Json& v = member(*entry, "values");
    if (static_cast<std::size_t>(e) >= v.size()) return {nullptr, nullptr};
    return {&member(*entry, "layout")[static_cast<std::size_t>(e)], &v[static_cast<std::size_t>(e)]};
  };
  std::string s = "<p class=\"sub\">tick " + std::to_string(tick) + " · " + esc(party_name(party)) +
                  (is_ref ? " (the reference)" : " against " + esc(party_name(ref_party)) + " (the reference)") + " · " +
                  str(*entry, "entities") + " entities, " + std::to_string(differs.size()) + " differ" +
                  (member(*entry, "cut") == true ? " (only the first " + str(S, "limit") + " are held here)" : "") + "</p>";
  // Every differing field of the differing entities, side by side.
  std::vector<std::vector<std::string>> rows;
  for (const auto& [e, d] : differs) {
    const auto [ref_layout, ref_vals] = ref_values(e);
    const Json& mine_layout = layout((*d)[1]);
    const Json& vals = (*d)[2];
    if (!vals.is_array()) {
      rows.push_back({std::to_string(e), esc(kind_of(e)), "", "<span class=\"bad\">absent</span>", "", "", ""});
      continue;
    }
    const Json& rl = ref_layout ? layout(*ref_layout) : Json::array();
    for (std::size_t k = 0; k < vals.size() && k < mine_layout.size(); ++k) {
      const std::string name = text(mine_layout[k][0]), type = text(mine_layout[k][1]);
      const bool comparable = ref_vals && ref_vals->is_array() && k < ref_vals->size() && k < rl.size() && text(rl[k][0]) == name;
      const std::string ours = text(vals[k]), theirs = comparable ? text((*ref_vals)[k]) : "";
      if (comparable && ours == theirs) continue;
      const FieldValue a = field_of(type, theirs), b = field_of(type, ours);
      const FieldGap gap = field_gap(a, b);
      rows.push_back({e < 0 ? "global" : std::to_string(e), esc(kind_of(e)), mono(name),
                      mono(field_hex(b) + "  " + field_decimal(b), "bad"), comparable ? mono(field_hex(a) + "  " + field_decimal(a)) : "-",
                      comparable ? mono(gap.difference) : "", comparable && gap.ulps ? mono(std::to_string(*gap.ulps)) : ""});
    }
  }
  if (!is_ref) {
    s += rows.empty() ? "<p>No entity of this state differs from the reference's.</p>"
                      : table({"entity", "kind", "field", party_name(party), party_name(ref_party) + " (reference)", "difference", "ulps"}, rows, "state-differs");
  }
  // The state itself, the first entities (the differing ones marked).
  std::vector<std::vector<std::string>> all;
  const Json& values = member(*entry, "values");
  const std::size_t n = values.size();
  for (std::int64_t e = -1; e < static_cast<std::int64_t>(std::min(n, kStaticEntities)); ++e) {
    const auto it = differs.find(e);
    const bool differ = it != differs.end();
    const auto [lid, vals0] = ref_values(e);
    const Json* vals = differ && (*it->second)[2].is_array() ? &(*it->second)[2] : vals0;
    const Json& l = differ && (*it->second)[2].is_array() ? layout((*it->second)[1]) : (lid ? layout(*lid) : Json::array());
    std::string cells;
    for (std::size_t k = 0; vals && vals->is_array() && k < vals->size() && k < l.size(); ++k)
      cells += (k ? " · " : "") + esc(text(l[k][0])) + " " + esc(field_decimal(field_of(text(l[k][1]), text((*vals)[k]))));
    all.push_back({e < 0 ? "global" : std::to_string(e) + (differ ? " <span class=\"bad\">≠</span>" : ""), esc(kind_of(e)), "<span class=\"mono\">" + cells + "</span>"});
  }
  s += table({"entity", "kind", "fields of " + party_name(party)}, all, "state-entities");
  if (n > kStaticEntities)
    s += "<p class=\"dim\" id=\"state-more\">" + std::to_string(n - kStaticEntities) + " more entities: the page's controls page through them.</p>";
  return s;
}

// ---- the sections ----

std::string difference_section(const Json& diff) {
  std::string s;
  const std::string where = str(diff, "where");
  const std::string kind = str(diff, "entity_kind");
  s += "<p>" + (where == "none" ? std::string("The states at this tick are equal.")
                                : "Where: " + esc(where) + (member(diff, "entity").is_null() ? "" : ", entity " + esc(str(diff, "entity"))) +
                                      (kind.empty() ? "" : " (" + esc(kind) + ")") +
                                      (member(diff, "byte_offset").is_number() ? ", from byte " + esc(str(diff, "byte_offset")) : "") +
                                      " (found from the " + esc(str(diff, "from")) + ")") + "</p>";
  std::vector<std::vector<std::string>> rows;
  if (member(diff, "fields").is_array())
    for (const Json& f : member(diff, "fields")) {
      const int width = integer(member(f, "width"), 32) == 64 ? 64 : 32;
      rows.push_back({mono(str(f, "name")),
                      mono(str(f, "a_hex") + "  " + str(f, "a_dec")) + bit_strip(width, str(f, "a_bits"), member(f, "diff_bits")),
                      mono(str(f, "b_hex") + "  " + str(f, "b_dec"), "bad") + bit_strip(width, str(f, "b_bits"), member(f, "diff_bits")),
                      mono(str(f, "difference")), mono(str(f, "ulps")),
                      mono(std::to_string(member(f, "diff_bits").is_array() ? member(f, "diff_bits").size() : 0) + " (" +
                           [&] { std::string b; for (const Json& x : member(f, "diff_bits")) b += (b.empty() ? "" : ", ") + text(x); return b; }() + ")")});
    }
  if (!rows.empty())
    s += table({"field", str(diff, "a_name"), str(diff, "b_name"), "difference", "ulps", "bits that differ"}, rows, "difference-fields");
  return s;
}

std::string inputs_section(const Json& frames) {
  if (!frames.is_array() || frames.empty()) return "<p class=\"dim\">no inputs held for these ticks</p>";
  const Json& first = member(frames[0], "players");
  std::vector<std::string> head{"tick"};
  for (std::size_t p = 0; first.is_array() && p < first.size(); ++p)
    head.push_back("player " + std::to_string(p) + (str(first[p], "name").empty() ? "" : " (" + str(first[p], "name") + ")"));
  std::vector<std::vector<std::string>> rows;
  for (const Json& f : frames) {
    std::vector<std::string> r{str(f, "tick")};
    if (member(f, "players").is_array())
      for (const Json& p : member(f, "players")) {
        if (member(p, "present") != true) { r.push_back("<span class=\"dim\">-</span>"); continue; }
        std::string cell = str(p, "text").empty() ? (str(p, "input").empty() ? "" : "0x" + str(p, "input")) : str(p, "text");
        if (member(p, "filled") == true) cell += " (filled)";
        if (member(p, "commands").is_array())
          for (const Json& c : member(p, "commands")) cell += (cell.empty() ? "" : "; ") + text(c);
        r.push_back(mono(cell.empty() ? "(nothing)" : cell, member(p, "filled") == true ? "dim" : ""));
      }
    rows.push_back(r);
  }
  return table(head, rows, "inputs-table");
}

std::string body_html(const Json& data, std::size_t* drawn) {
  const bool bundle = str(data, "kind") == "bundle";
  const Json& h = member(data, "header");
  const Json& diff = member(data, "difference");
  const Json& rep = member(data, "report");
  const std::string tick = str(data, "tick");
  std::string s = "<header><h1 id=\"title\">" + esc(bundle ? "Desync at tick " + tick : "Replay " + str(data, "source")) +
                  "</h1><div class=\"sub\" id=\"subtitle\">" +
                  esc(str(h, "module") + " (" + str(h, "settings") + ") · " + str(h, "players") + " players · " +
                      (bundle ? "written by " + str(data, "written_by") : "ticks to " + tick) + " · source " + str(data, "source")) +
                  "</div></header>\n<main>\n";
  // The headline; its data attributes are for tools that read the page.
  if (bundle) {
    std::string names;
    if (member(diff, "fields").is_array())
      for (const Json& f : member(diff, "fields")) names += (names.empty() ? "" : ", ") + str(f, "name");
    if (names.empty()) names = str(diff, "field_name");
    const std::string where = str(diff, "where");
    const std::string kind = str(diff, "entity_kind");
    const std::string what = where == "entity" && !names.empty() ? "entity " + str(diff, "entity") + (kind.empty() ? "" : " (" + kind + ")") + " · field " + names
                             : where == "global" && !names.empty() ? "global field " + names
                             : where.empty() ? "not localized" : where;
    const std::string first_field = member(diff, "fields").is_array() && !member(diff, "fields").empty() ? str(member(diff, "fields")[0], "name") : str(diff, "field_name");
    s += "<div id=\"headline\" class=\"headline\" data-tick=\"" + esc(tick) + "\" data-entity=\"" + esc(str(diff, "entity")) +
         "\" data-field=\"" + esc(first_field) + "\">" +
         esc("tick " + tick + " · " + what + (str(rep, "odd_one_out").empty() ? "" : " · odd one out: " + str(rep, "odd_one_out")) +
             (str(rep, "check").empty() ? "" : " · check " + str(rep, "check"))) + "</div>\n";
  } else {
    const Json& ref = member(data, "reference");
    const std::string from = ref.is_array() && !ref.empty() && ref[0].is_array() ? text(ref[0][0]) : "0";
    s += "<div id=\"headline\" class=\"headline ok\">" +
         esc(std::string(member(data, "complete") == true ? "complete" : "incomplete") + " replay, ticks " + from + " to " + tick + ", " +
             std::to_string(member(data, "keyframes").is_array() ? member(data, "keyframes").size() : 0) + " keyframes" +
             (str(data, "end_reason").empty() ? "" : " · ended: " + str(data, "end_reason"))) + "</div>\n";
  }
  s += "<div id=\"notes\" class=\"notes\">";
  if (member(data, "notes").is_array())
    for (const Json& n : member(data, "notes")) s += "<div>" + esc(text(n)) + "</div>";
  if (!str(rep, "note").empty()) s += "<div>note: " + esc(str(rep, "note")) + "</div>";
  if (!str(rep, "detail").empty()) s += "<div>" + esc(str(rep, "detail")) + "</div>";
  s += "</div>\n";
  s += "<section id=\"timeline-section\"><h2>Timeline</h2><p class=\"sub legend\"><span class=\"good\">■</span> agrees with the reference "
       "<span class=\"bad\">■</span> differs <span class=\"dim\">■</span> no reference <span class=\"tickline\">|</span> the divergent tick; "
       "a white-edged red bar: the row's first divergent tick; hover a tick for its votes</p>" +
       timeline_section(data, bundle) + "</section>\n";
  if (bundle) {
    s += "<section id=\"difference-section\"><h2>What differs</h2><div id=\"difference\">" + difference_section(diff) + "</div></section>\n";
  }
  s += "<section id=\"world-section\"><h2>The world</h2><div id=\"keyframe-control\"></div><div class=\"views\" id=\"views\">";
  const Json& views = member(data, "views");
  if (!views.is_array() || views.empty()) s += "<p class=\"dim\">no drawing: no state here loads into the module</p>";
  else
    for (std::size_t i = 0; i < views.size(); ++i) {
      const bool hidden = !bundle && i + 1 != views.size();
      std::size_t shapes = 0;
      s += draw_view(views[i], bundle ? 480 : 600, hidden, i, &shapes);
      if (!hidden) *drawn += shapes;
    }
  s += "</div></section>\n";
  if (bundle) {
    // The state browser: the odd party at the tick, statically; the script steps through the rest.
    std::int64_t party = -1;
    if (member(data, "sides").is_array() && member(data, "sides").size() == 2) party = integer(member(data, "sides")[1]);
    if (party < 0 && member(member(data, "states"), "ticks").is_array())  // one state at the tick: that one
      for (const Json& e : member(member(data, "states"), "ticks"))
        if (member(e, "tick") == member(data, "tick") && member(e, "parties").is_array() && !member(e, "parties").empty())
          party = integer(member(member(e, "parties")[0], "party"));
    s += "<section id=\"states-section\"><h2>States</h2><div id=\"state-controls\"></div><div id=\"state-view\">" +
         (party >= 0 ? state_view(data, integer(member(data, "tick"), 0), party) : "<p class=\"dim\">no state of this tick is held</p>") +
         "</div></section>\n";
  }
  if (bundle) {
    std::vector<std::vector<std::string>> votes;
    if (member(rep, "votes").is_array())
      for (const Json& v : member(rep, "votes")) {
        std::string who;
        if (member(v, "peers").is_array())
          for (const Json& p : member(v, "peers")) who += (who.empty() ? "" : ", ") + text(p);
        votes.push_back({mono(str(v, "hash")), esc(who)});
      }
    s += "<section id=\"votes-section\"><h2>Votes</h2><div id=\"votes\">" +
         (votes.empty() ? "<p class=\"dim\">no votes in this report</p>" : table({"hash", "who"}, votes)) + "</div></section>\n";
  }
  s += "<section id=\"inputs-section\"><h2>Inputs</h2><div id=\"inputs\">" + inputs_section(member(data, "inputs")) + "</div></section>\n";
  std::string commands;
  if (member(data, "commands").is_array())
    for (const Json& c : member(data, "commands")) commands += esc(text(c)) + "\n";
  s += "<section><h2>Replay to it</h2><pre id=\"commands\">" + commands + "</pre></section>\n";
  std::string libs, names;
  if (member(h, "libraries").is_array())
    for (const Json& l : member(h, "libraries")) libs += (libs.empty() ? "" : ", ") + str(l, "name") + " " + str(l, "build");
  if (member(h, "names").is_array())
    for (std::size_t i = 0; i < member(h, "names").size(); ++i)
      names += (i ? ", " : "") + std::to_string(i) + ": " + (text(member(h, "names")[i]).empty() ? "-" : text(member(h, "names")[i]));
  s += "<section><h2>Session</h2><div id=\"session\">" +
       table({"", ""}, {{"module", esc(str(h, "module"))}, {"settings", esc(str(h, "settings"))}, {"players", esc(names)},
                        {"fingerprint", mono(str(h, "fingerprint"))}, {"protocol", esc(str(h, "protocol_version"))},
                        {"input delay", esc(str(h, "input_delay"))}, {"libraries", esc(libs.empty() ? "none" : libs)}, {"viewer", esc(str(h, "viewer"))}}) +
       "</div></section>\n</main>\n";
  return s;
}

void replace(std::string& page, std::string_view marker, const std::string& with) {
  const std::size_t at = page.find(marker);
  if (at != std::string::npos) page.replace(at, marker.size(), with);
}

}  // namespace

std::string page_html(const Json& data) {
  std::size_t drawn = 0;
  const std::string body = body_html(data, &drawn);
  // The data goes in a <script type="application/json">: JSON text with every '<', '>' and '&'
  // escaped (they occur only inside strings), so no string can close the element or open another.
  std::string json = data.dump(-1, ' ', true, Json::error_handler_t::replace);
  std::string safe;
  safe.reserve(json.size() + 64);
  for (const char c : json) {
    if (c == '<') safe += "\\u003c";
    else if (c == '>') safe += "\\u003e";
    else if (c == '&') safe += "\\u0026";
    else safe += c;
  }
  std::string page = kPageTemplate;
  replace(page, "__LOCKSTEP_TITLE__", esc(str(data, "kind") == "bundle" ? "desync at tick " + str(data, "tick") + " - lockstep" : "replay - lockstep"));
  replace(page, "__LOCKSTEP_DRAWN__", std::to_string(drawn));
  // Each marker is found where the template has it, before anything from the file is in the page
  // (the data after the body's marker, then the body before it).
  replace(page, "__LOCKSTEP_DATA__", safe);
  replace(page, "__LOCKSTEP_BODY__", body);
  return page;
}

}  // namespace lockstep
