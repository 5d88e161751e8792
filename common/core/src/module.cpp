// What the executables derive from any module: its join fingerprint, a blank tick, the difference
// between two lists of library builds (module.hpp).
#include "lockstep/module.hpp"

namespace lockstep {

std::uint64_t join_fingerprint(const WorldFactory& factory) {
  const auto probe = factory ? factory(WorldParams{{}, 1}) : nullptr;
  return probe ? probe->fingerprint() : 0;
}

PlayerTick blank_tick(const Module& m) {
  PlayerTick t;
  t.input.assign(m.input_size, 0);
  return t;
}

std::string library_difference(std::span<const LibraryBuild> a, std::span<const LibraryBuild> b,
                               std::string_view a_name, std::string_view b_name) {
  auto find = [](std::span<const LibraryBuild> in, const std::string& name) -> const LibraryBuild* {
    for (const LibraryBuild& l : in)
      if (l.name == name) return &l;
    return nullptr;
  };
  const std::string an(a_name), bn(b_name);
  auto id = [](const std::string& build) { return build.size() > 16 ? build.substr(0, 16) + "..." : build; };
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  for (const LibraryBuild& y : b) {
    const LibraryBuild* x = find(a, y.name);
    if (!x) add(bn + "'s module links " + y.name + " (build " + id(y.build) + "), " + an + "'s does not");
    else if (x->build != y.build) add(y.name + " is another build: " + an + "'s " + id(x->build) + ", " + bn + "'s " + id(y.build));
  }
  for (const LibraryBuild& x : a)
    if (!find(b, x.name)) add(an + "'s module links " + x.name + " (build " + id(x.build) + "), " + bn + "'s does not");
  if (!out.empty()) out += " (peers need the same build, or the module opts it out: docs/GUIDE.md §14)";
  return out;
}

}  // namespace lockstep
