// The viewer page of a desync bundle or a replay: one self-contained HTML file (no network, no
// script or style from elsewhere) that opens from a CI artifact. For a bundle it shows each
// party's hashes on a timeline with the divergent tick marked, the entity and fields that differ
// side by side with the bits that differ, the inputs around the tick, a drawing of the world at
// that tick from the module's draw primitives with the differing entity marked, and the commands
// that replay to it. For a replay: the timeline and a drawing at each keyframe to step through.
// Every string from the file is data to the page's script, shown as text, never as markup.
#pragma once

#include <string>

#include "lockstep/desync_bundle.hpp"
#include "lockstep/export.h"
#include "lockstep/module.hpp"

namespace lockstep {

/// The page of bundle `b`, read from `source` (named on the page), its states read with `module`.
/// A module that cannot read them leaves the drawings out and says so on the page. With the
/// session's replay (`session`, the server's recording), the timeline's reference row covers the
/// whole session, not only the bundle's window.
LOCKSTEP_API std::string bundle_page(const Module& module, const DesyncBundle& b, const std::string& source,
                                     const Replay* session = nullptr);
/// The page of replay `r`, read in full from `source`.
LOCKSTEP_API std::string replay_page(const Module& module, const Replay& r, const std::string& source);
/// The page's data (what bundle_page embeds), for tests and other front ends.
LOCKSTEP_API Json bundle_page_data(const Module& module, const DesyncBundle& b, const std::string& source,
                                   const Replay* session = nullptr);
LOCKSTEP_API Json replay_page_data(const Module& module, const Replay& r, const std::string& source);
/// A page of `data` (one of the above).
LOCKSTEP_API std::string page_html(const Json& data);

}  // namespace lockstep
