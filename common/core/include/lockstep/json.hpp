// JSON for everything the project writes or reads (summaries, desync reports, status replies,
// benchmark rows): Debian's nlohmann-json, with keys kept in the order they are written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lockstep {

using Json = nlohmann::ordered_json;

/// The document as text (`indent` < 0: one line). Strings that are not UTF-8 (bytes from a file
/// or the network) are written with U+FFFD in place of the bad bytes instead of failing.
inline std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// Parses `text`; a discarded value (is_discarded()) when it is not JSON.
inline Json json_parse(const std::string& text) { return Json::parse(text, nullptr, /*allow_exceptions=*/false); }

}  // namespace lockstep
