// A game's description for relay mode (game_description.hpp).
#include "lockstep/game_description.hpp"

#include <cstdlib>

#include "lockstep/bytes.hpp"
#include "lockstep/input.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {
constexpr const char* kFormat = "lockstep-game/1";

bool parse_hash(const Json& j, std::uint64_t* out) {
  const auto h = j.is_string() ? parse_hash_hex(j.get<std::string>()) : std::nullopt;
  if (h) *out = *h;
  return h.has_value();
}
}  // namespace

GameDescription describe_module(const Module& m, const WorldParams& world) {
  GameDescription d;
  d.name = std::string(m.name);
  d.version = m.version;
  d.build_id = m.build_id;  // 0 (null in the JSON) for a built-in module
  d.game.input_size = m.input_size;
  d.game.join_fingerprint = join_fingerprint(m.create);
  WorldParams w = world;
  if (w.players == 0) w.players = 1;
  if (const auto sim = m.create(w)) {
    d.game.world_fingerprint = sim->fingerprint();
    d.game.input_size = sim->input_size();
  }
  d.libraries.assign(m.libraries.begin(), m.libraries.end());
  d.code = std::string(m.code);
  d.code_fma = m.fma_instructions;
  d.settings = world.settings;
  d.settings_text = m.settings_text ? m.settings_text(world.settings) : "";
  return d;
}

Json description_json(const GameDescription& d) {
  Json libs = Json::array();
  for (const LibraryBuild& l : d.libraries) libs.push_back(Json{{"name", l.name}, {"build", l.build}});
  return Json{{"format", kFormat},
              {"name", d.name},
              {"version", d.version},
              {"build_id", d.build_id ? Json(hash_hex(d.build_id)) : Json(nullptr)},
              {"input_size", d.game.input_size},
              {"settings", bytes_hex(d.settings)},
              {"settings_text", d.settings_text},
              {"join_fingerprint", hash_hex(d.game.join_fingerprint)},
              {"world_fingerprint", hash_hex(d.game.world_fingerprint)},
              {"libraries", libs},
              {"code", d.code},
              {"fma", d.code_fma}};
}

bool parse_description(std::string_view text, GameDescription* out, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = why;
    return false;
  };
  if (text.size() > 64 * 1024) return fail("the description is over 64 KiB");
  const Json j = json_parse(std::string(text));
  if (!j.is_object()) return fail("not a JSON object");
  if (!j.contains("format") || j["format"] != kFormat) return fail(std::string("\"format\" must be \"") + kFormat + "\"");
  GameDescription d;
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().size() > 64) return fail("\"name\" must be text of at most 64 bytes");
    d.name = j["name"].get<std::string>();
  }
  if (j.contains("version")) {
    if (!j["version"].is_number_unsigned() || j["version"].get<std::uint64_t>() > UINT32_MAX)
      return fail("\"version\" must be a whole number below 2^32");
    d.version = j["version"].get<std::uint32_t>();
  }
  if (j.contains("build_id") && !j["build_id"].is_null() && !parse_hash(j["build_id"], &d.build_id))
    return fail("\"build_id\" must be 16 hex digits");
  if (!j.contains("input_size") || !j["input_size"].is_number_unsigned() || j["input_size"].get<std::uint64_t>() > kMaxInputBytes)
    return fail("\"input_size\" must be a whole number of bytes, 0.." + std::to_string(kMaxInputBytes));
  d.game.input_size = j["input_size"].get<std::uint32_t>();
  if (j.contains("settings")) {
    if (!j["settings"].is_string() || !parse_bytes_hex(j["settings"].get<std::string>(), &d.settings))
      return fail("\"settings\" must be the settings' bytes in hex");
    if (d.settings.size() > kMaxSettingsBytes) return fail("\"settings\" is over " + std::to_string(kMaxSettingsBytes) + " bytes");
  }
  if (j.contains("settings_text") && j["settings_text"].is_string()) d.settings_text = j["settings_text"].get<std::string>();
  if (j.contains("libraries")) {
    const Json& libs = j["libraries"];
    if (!libs.is_array() || libs.size() > kMaxLibraries)
      return fail("\"libraries\" must be a list of at most " + std::to_string(kMaxLibraries) +
                  " {\"name\", \"build\"}");
    for (const Json& l : libs) {
      if (!l.is_object() || !l.contains("name") || !l["name"].is_string() || !l.contains("build") ||
          !l["build"].is_string() || l["name"].get<std::string>().empty() || l["name"].get<std::string>().size() > kMaxLibraryNameBytes ||
          l["build"].get<std::string>().size() > kMaxLibraryBuildBytes)
        return fail("each of \"libraries\" must be {\"name\": 1-" + std::to_string(kMaxLibraryNameBytes) +
                    " bytes, \"build\": at most " + std::to_string(kMaxLibraryBuildBytes) + " bytes}");
      d.libraries.push_back({l["name"].get<std::string>(), l["build"].get<std::string>()});
    }
  }
  if (j.contains("code")) {
    if (!j["code"].is_string() || j["code"].get<std::string>().size() > kMaxLibraryBuildBytes)
      return fail("\"code\" must be a string of at most " + std::to_string(kMaxLibraryBuildBytes) + " bytes");
    d.code = j["code"].get<std::string>();
  }
  if (j.contains("fma")) {
    if (!j["fma"].is_number_unsigned() || j["fma"].get<std::uint64_t>() > 0xffffffffu)
      return fail("\"fma\" must be a count of instructions");
    d.code_fma = j["fma"].get<std::uint32_t>();
  }
  const bool has_join = j.contains("join_fingerprint"), has_world = j.contains("world_fingerprint");
  if (has_join != has_world) return fail("give both \"join_fingerprint\" and \"world_fingerprint\", or neither");
  if (has_join) {
    if (!parse_hash(j["join_fingerprint"], &d.game.join_fingerprint) || d.game.join_fingerprint == 0)
      return fail("\"join_fingerprint\" must be 16 hex digits, not zero");
    if (!parse_hash(j["world_fingerprint"], &d.game.world_fingerprint) || d.game.world_fingerprint == 0)
      return fail("\"world_fingerprint\" must be 16 hex digits, not zero");
  } else {
    // A game's identity as lockstep_session.h makes it from its lockstep_game fields.
    if (d.name.empty() || d.build_id == 0)
      return fail("without fingerprints, \"name\", \"version\", a non-zero \"build_id\" and \"input_size\" are needed");
    const std::uint64_t code = module_code_fingerprint(d.name, d.version, d.build_id, d.game.input_size);
    d.game.join_fingerprint = world_fingerprint(code, {});
    d.game.world_fingerprint = world_fingerprint(code, d.settings);
  }
  *out = std::move(d);
  return true;
}

bool parse_equal_builds(std::string_view text, std::vector<std::string>* codes, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = why;
    return false;
  };
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  if (!j.contains("format") || j["format"] != "lockstep-equal-builds/1")
    return fail("\"format\" must be \"lockstep-equal-builds/1\" (lockstep-gate writes it)");
  if (!j.contains("builds") || !j["builds"].is_array() || j["builds"].size() > 64)
    return fail("\"builds\" must be a list of at most 64 {\"leg\", \"code\"}");
  std::vector<std::string> out;
  for (const Json& b : j["builds"]) {
    if (!b.is_object() || !b.contains("code") || !b["code"].is_string() || b["code"].get<std::string>().empty() ||
        b["code"].get<std::string>().size() > kMaxLibraryBuildBytes)
      return fail("each of \"builds\" must have a \"code\" of 1-" + std::to_string(kMaxLibraryBuildBytes) + " bytes");
    out.push_back(b["code"].get<std::string>());
  }
  *codes = std::move(out);
  return true;
}

}  // namespace lockstep
