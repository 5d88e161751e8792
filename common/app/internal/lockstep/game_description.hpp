// A game as a server without its rules knows it (relay mode): the fingerprints joins are checked
// against, the input size and the world settings' bytes. `lockstep-synctest --describe` writes it
// for a module and world; `lockstep-server --relay FILE` reads it. A game that owns its state and
// has no module library writes it by hand from its name, version, build id and input size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/json.hpp"
#include "lockstep/module.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep {

struct GameDescription {
  std::string name;            ///< the module's (for logs and replays)
  std::uint32_t version = 0;
  std::uint64_t build_id = 0;  ///< 0: not given (the fingerprints are)
  RelayGame game;              ///< fingerprints and input size
  std::vector<std::uint8_t> settings;  ///< the world settings' canonical bytes
  std::string settings_text;   ///< "key=value,..." as the module reads them ("" when not known)
  std::vector<LibraryBuild> libraries;  ///< the libraries the module's fingerprint covers
  std::string code;  ///< the module file's machine code (Module::code), "" when not from a file
  std::uint32_t code_fma = 0;  ///< fused multiply-adds in it (Module::fma_instructions)
};

/// The description of module `m`'s world `world` (its settings parsed already).
GameDescription describe_module(const Module& m, const WorldParams& world);
/// {"format": "lockstep-game/1", "name", "version", "build_id", "input_size", "settings" (hex),
///  "settings_text", "join_fingerprint", "world_fingerprint", "libraries": [{"name", "build"}],
///  "code", "fma"}; hashes as 16 hex digits.
Json description_json(const GameDescription& d);
/// Reads a description (untrusted text). With both fingerprints given they are taken as they
/// are; without them, name, version, a non-zero build_id and input_size make them, as
/// lockstep_session.h's games do. False with a sentence in `error` naming the bad field.
bool parse_description(std::string_view text, GameDescription* out, std::string* error);

/// The machine code a determinism gate run replayed equal (lockstep-gate's equal-builds report,
/// untrusted text): {"format": "lockstep-equal-builds/1", "builds": [{"leg", "code"}, ...]}, at
/// most 64 builds, each code 1-80 bytes. False with a sentence in `error` naming the bad field.
bool parse_equal_builds(std::string_view text, std::vector<std::string>* codes, std::string* error);

}  // namespace lockstep
