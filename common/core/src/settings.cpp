// World settings as key=value text, parsed against a module's table of bounded settings
// (settings.hpp).
#include "lockstep/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace lockstep {

bool split_settings(std::string_view text, std::vector<std::pair<std::string, std::string>>* out, std::string* error) {
  out->clear();
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      *error = "'" + std::string(item) + "' is not key=value";
      return false;
    }
    out->emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return true;
}

bool world_settings_text(const std::string& arg, std::string* text, std::string* error) {
  if (arg.empty() || arg[0] != '@') {
    *text = arg;
    return true;
  }
  const std::string path = arg.substr(1);
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read the world settings file " + path + ": " + std::strerror(errno);
    return false;
  }
  text->clear();
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c) != 0; }), line.end());
    if (line.empty()) continue;
    *text += (text->empty() ? "" : ",") + line;
  }
  return true;
}

bool parse_setting_number(const std::string& key, const std::string& value, std::uint64_t lo, std::uint64_t hi,
                          std::uint64_t* out, std::string* error) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE || *end != '\0' ||
      v < lo || v > hi) {
    *error = "the world setting " + key + " must be a whole number from " + std::to_string(lo) + " to " +
             std::to_string(hi) + ", not '" + value + "'";
    return false;
  }
  *out = v;
  return true;
}

bool apply_settings(std::string_view game, std::span<const WorldSetting> table, std::string_view text,
                    std::span<std::uint64_t> values, std::string* error) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!split_settings(text, &pairs, error)) return false;
  for (const auto& [key, value] : pairs) {
    std::size_t k = 0;
    while (k < table.size() && table[k].key != key) ++k;
    if (k == table.size() || k >= values.size()) {
      std::string keys;
      for (const WorldSetting& s : table) keys += (keys.empty() ? "" : ", ") + std::string(s.key);
      *error = "the " + std::string(game) + " has no world setting '" + key + "' (it has " + keys + ")";
      return false;
    }
    if (!parse_setting_number(key, value, table[k].min, table[k].max, &values[k], error)) return false;
  }
  return true;
}

std::string settings_values_text(std::span<const WorldSetting> table, std::span<const std::uint64_t> values) {
  std::string out;
  for (std::size_t k = 0; k < table.size() && k < values.size(); ++k)
    out += (out.empty() ? "" : ",") + std::string(table[k].key) + "=" + std::to_string(values[k]);
  return out;
}

}  // namespace lockstep
