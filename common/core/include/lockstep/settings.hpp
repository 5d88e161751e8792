// World settings as text: "key=value,..." or an @FILE of such lines, parsed against a module's
// table of settings, each a whole number within its bounds. One parser serves every game; what
// the numbers mean and how they become the canonical bytes is the game's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/export.h"

namespace lockstep {

/// One world setting, for --sim list and --help, and its bounds.
struct LOCKSTEP_API WorldSetting {
  std::string_view key;
  std::string_view default_value;
  std::string_view help;
  std::uint64_t min = 0;           ///< the smallest value taken
  std::uint64_t max = UINT64_MAX;  ///< the largest value taken
};

/// What --world ARG names: ARG itself ("k=v,k=v"), or for "@FILE" the settings in FILE (one
/// key=value per line or comma-separated; blank lines and lines from '#' on are skipped). False
/// with a sentence in `error` when the file cannot be read.
LOCKSTEP_API bool world_settings_text(const std::string& arg, std::string* text, std::string* error);

/// A world setting's whole number in [lo, hi]; false with a sentence naming the key otherwise.
LOCKSTEP_API bool parse_setting_number(const std::string& key, const std::string& value, std::uint64_t lo, std::uint64_t hi,
                          std::uint64_t* out, std::string* error);

/// Splits "k=v,k=v" into pairs; false with `error` set on an entry without '=' or an empty key.
LOCKSTEP_API bool split_settings(std::string_view text, std::vector<std::pair<std::string, std::string>>* out, std::string* error);

/// Applies "k=v,..." to `values` (one per entry of `table`, in its order; the caller fills them
/// with the current settings first). False with a sentence in `error` naming `game` and the key
/// when a key is unknown or a value is not a whole number within its setting's bounds; `values`
/// may then be partly changed.
LOCKSTEP_API bool apply_settings(std::string_view game, std::span<const WorldSetting> table, std::string_view text,
                    std::span<std::uint64_t> values, std::string* error);

/// "k=v,..." of every setting in table order.
LOCKSTEP_API std::string settings_values_text(std::span<const WorldSetting> table, std::span<const std::uint64_t> values);

}  // namespace lockstep
