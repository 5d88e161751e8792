// The C API (lockstep.h) against the C++ core it wraps: the fields of every entity and the global
// fields, as the desync probe's Fields and Global answers need them, equal the Simulation's, for
// each built-in module; a perturbed world is localized to one field through the C calls alone;
// and every bad argument is refused with the documented result.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "lockstep/lockstep.h"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"

using namespace lockstep;

// The status's first name stays an alias of it: a game written with it compiles unchanged
// (tests/embed/c_player.c still says lockstep_result).
static_assert(std::is_same_v<lockstep_result, lockstep_status>);

namespace {

// A world of `name`'s module with 2 players, stepped `ticks` ticks on its bots' inputs and
// commands through lockstep_world_step.
lockstep_world* stepped_world(const char* name, std::uint32_t ticks) {
  char error[256] = "";
  const lockstep_module* m = nullptr;
  REQUIRE(lockstep_module_builtin(name, &m, error, sizeof error) == LOCKSTEP_OK);
  lockstep_world* w = nullptr;
  REQUIRE_MESSAGE(lockstep_world_create(m, nullptr, 0, 2, &w, error, sizeof error) == LOCKSTEP_OK, error);
  const Module& module = *find_module(name);
  const std::uint32_t size = lockstep_module_input_size(m);
  for (std::uint32_t t = 1; t <= ticks; ++t) {
    std::vector<std::uint8_t> inputs;
    std::vector<PlayerTick> players;
    for (std::uint32_t p = 0; p < 2; ++p) {
      players.push_back(blank_tick(module));
      module.bot(p + 1, t, &players.back());
      inputs.insert(inputs.end(), players.back().input.begin(), players.back().input.end());
    }
    std::vector<lockstep_command> commands;
    for (std::uint32_t p = 0; p < 2; ++p)
      for (std::size_t i = 0; i < players[p].commands.size(); ++i) {
        const auto bytes = players[p].commands.at(i);
        commands.push_back({p, static_cast<std::uint32_t>(bytes.size()), bytes.data()});
      }
    const lockstep_frame f{t,
                           3u,
                           0u,
                           2u,
                           size,
                           inputs.empty() ? nullptr : inputs.data(),
                           static_cast<std::uint32_t>(commands.size()),
                           commands.empty() ? nullptr : commands.data()};
    REQUIRE_MESSAGE(lockstep_world_step(w, &f, error, sizeof error) == LOCKSTEP_OK, error);
  }
  return w;
}

// The C++ Simulation holding the same state as `w` (loaded from its serialization).
std::unique_ptr<Simulation> same_state(const char* name, const lockstep_world* w) {
  std::vector<std::uint8_t> bytes(lockstep_world_serialize(w, nullptr, 0));
  REQUIRE(lockstep_world_serialize(w, bytes.data(), bytes.size()) == bytes.size());
  WorldParams params;
  params.players = 2;
  auto sim = find_module(name)->create(params);
  REQUIRE(sim != nullptr);
  REQUIRE(sim->deserialize(bytes));
  REQUIRE(sim->hash() == lockstep_world_hash(w));
  return sim;
}

// entity UINT32_MAX: the global fields. Asks for the count first (cap 0), then for the fields.
std::vector<lockstep_field> c_fields(const lockstep_world* w, std::uint32_t entity) {
  char error[256] = "";
  std::size_t count = 12345;
  const lockstep_status sizing = entity == UINT32_MAX
                                     ? lockstep_world_global_fields(w, nullptr, 0, &count, error, sizeof error)
                                     : lockstep_world_entity_fields(w, entity, nullptr, 0, &count, error, sizeof error);
  CHECK(sizing == (count == 0 ? LOCKSTEP_OK : LOCKSTEP_ERROR_BUFFER));
  std::vector<lockstep_field> out(count);
  std::size_t again = 0;
  const lockstep_status r =
      entity == UINT32_MAX ? lockstep_world_global_fields(w, out.data(), out.size(), &again, error, sizeof error)
                           : lockstep_world_entity_fields(w, entity, out.data(), out.size(), &again, error, sizeof error);
  CHECK_MESSAGE(r == LOCKSTEP_OK, error);
  CHECK(again == count);
  return out;
}

void check_equal(const std::vector<lockstep_field>& c, const std::vector<FieldValue>& cxx) {
  REQUIRE(c.size() == cxx.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    CAPTURE(i);
    REQUIRE(c[i].name != nullptr);
    CHECK(std::string(c[i].name) == cxx[i].name);
    CHECK(c[i].kind == static_cast<std::uint32_t>(cxx[i].kind));
    CHECK(c[i].bits == cxx[i].bits);
  }
}

}  // namespace

TEST_SUITE("api/c_api") {
  TEST_CASE("entity and global fields equal the Simulation's, for every built-in module") {
    for (const char* name : {"arena", "skirmish"}) {
      CAPTURE(name);
      lockstep_world* w = stepped_world(name, 120);
      const auto sim = same_state(name, w);
      const std::uint32_t n = lockstep_world_entity_count(w);
      REQUIRE(n == sim->entity_count());
      REQUIRE(n > 0);
      bool nonzero = false;
      for (std::uint32_t e = 0; e < n; ++e) {
        CAPTURE(e);
        const auto fields = c_fields(w, e);
        check_equal(fields, sim->entity_fields(e));
        for (const lockstep_field& f : fields) nonzero |= f.bits != 0;
      }
      CHECK(nonzero);  // a stepped world, not a zeroed one
      check_equal(c_fields(w, UINT32_MAX), sim->global_fields());
      // The kinds are module_abi.h's: 0 f32, 1 f64, 2 u32, 3 u64, as FieldValue::Kind numbers them.
      for (const lockstep_field& f : c_fields(w, UINT32_MAX)) CHECK(f.kind <= 3);
      // A global field "tick" (both built-in modules have one) holds the world's tick.
      for (const lockstep_field& f : c_fields(w, UINT32_MAX))
        if (std::string(f.name) == "tick") CHECK(f.bits == lockstep_world_tick(w));
      lockstep_world_destroy(w);
    }
  }

  TEST_CASE("a buffer too small reports the count and writes nothing, a larger one is filled to the count") {
    for (const char* name : {"arena", "skirmish"}) {
      CAPTURE(name);
      lockstep_world* w = stepped_world(name, 10);
      const auto sim = same_state(name, w);
      const std::vector<FieldValue> expected = sim->entity_fields(0);
      REQUIRE(expected.size() >= 2);
      const lockstep_field sentinel{nullptr, 99u, 0xdeadbeefu};
      char error[256] = "";
      std::vector<lockstep_field> out(expected.size() + 3, sentinel);
      std::size_t count = 0;
      CHECK(lockstep_world_entity_fields(w, 0, out.data(), expected.size() - 1, &count, error, sizeof error) ==
            LOCKSTEP_ERROR_BUFFER);
      CHECK(count == expected.size());
      CHECK(std::string(error).find(std::to_string(expected.size())) != std::string::npos);
      for (const lockstep_field& f : out) CHECK((f.name == nullptr && f.kind == 99u && f.bits == 0xdeadbeefu));
      CHECK(lockstep_world_entity_fields(w, 0, out.data(), out.size(), &count, nullptr, 0) == LOCKSTEP_OK);
      CHECK(count == expected.size());
      check_equal({out.begin(), out.begin() + static_cast<std::ptrdiff_t>(count)}, expected);
      for (std::size_t i = count; i < out.size(); ++i) CHECK(out[i].kind == 99u);

      const std::vector<FieldValue> globals = sim->global_fields();
      REQUIRE(globals.size() >= 2);
      CHECK(lockstep_world_global_fields(w, out.data(), 1, &count, nullptr, 0) == LOCKSTEP_ERROR_BUFFER);
      CHECK(count == globals.size());
      CHECK(lockstep_world_global_fields(w, nullptr, 0, &count, nullptr, 0) == LOCKSTEP_ERROR_BUFFER);
      CHECK(count == globals.size());
      lockstep_world_destroy(w);
    }
  }

  TEST_CASE("the names stay valid until the world's next fields call, and belong to each world") {
    lockstep_world* w = stepped_world("arena", 5);
    lockstep_world* copy = lockstep_world_clone(w);
    REQUIRE(copy != nullptr);
    lockstep_field a[8], b[8];
    std::size_t na = 0, nb = 0;
    REQUIRE(lockstep_world_entity_fields(w, 0, a, 8, &na, nullptr, 0) == LOCKSTEP_OK);
    // Another world's fields call, a step of this one and its hash leave them as they were.
    REQUIRE(lockstep_world_global_fields(copy, b, 8, &nb, nullptr, 0) == LOCKSTEP_OK);
    const lockstep_module* m = nullptr;
    REQUIRE(lockstep_module_builtin("arena", &m, nullptr, 0) == LOCKSTEP_OK);
    const std::uint32_t size = lockstep_module_input_size(m);
    std::vector<std::uint8_t> inputs(std::size_t{2} * size + 1, 1);  // both players steer
    const lockstep_frame f{6, 3u, 0u, 2u, size, inputs.data(), 0, nullptr};
    REQUIRE(lockstep_world_step(w, &f, nullptr, 0) == LOCKSTEP_OK);
    CHECK(lockstep_world_hash(w) != lockstep_world_hash(copy));
    REQUIRE(na > 0);
    REQUIRE(nb > 0);
    CHECK(std::string(a[0].name) == "x");
    CHECK(std::string(b[0].name) == "tick");
    lockstep_world_destroy(copy);
    lockstep_world_destroy(w);
  }

  TEST_CASE("a perturbed world's desync is localized to one field through the C calls") {
    for (const char* name : {"arena", "skirmish"}) {
      CAPTURE(name);
      lockstep_world* w = stepped_world(name, 60);
      auto bad = same_state(name, w);
      bad->perturb(7);
      std::vector<std::uint8_t> bytes;
      bad->serialize(bytes);
      lockstep_world* other = lockstep_world_clone(w);
      char error[256] = "";
      REQUIRE_MESSAGE(lockstep_world_load(other, bytes.data(), bytes.size(), error, sizeof error) == LOCKSTEP_OK, error);
      REQUIRE(lockstep_world_hash(other) != lockstep_world_hash(w));
      std::uint32_t differing = 0, entity = 0;
      for (std::uint32_t e = 0; e < lockstep_world_entity_count(w); ++e)
        if (lockstep_world_entity_hash(w, e) != lockstep_world_entity_hash(other, e)) ++differing, entity = e;
      REQUIRE(differing == 1);
      const auto ours = c_fields(w, entity), theirs = c_fields(other, entity);
      REQUIRE(ours.size() == theirs.size());
      int fields = 0;
      for (std::size_t i = 0; i < ours.size(); ++i)
        if (ours[i].bits != theirs[i].bits) {
          ++fields;
          CHECK((ours[i].bits ^ theirs[i].bits) == 1u);  // perturb flips the lowest bit
        }
      CHECK(fields == 1);
      check_equal(c_fields(other, UINT32_MAX), bad->global_fields());
      lockstep_world_destroy(other);
      lockstep_world_destroy(w);
    }
  }

  TEST_CASE("bad arguments are refused with LOCKSTEP_ERROR_ARGUMENT and a count of 0") {
    lockstep_world* w = stepped_world("skirmish", 3);
    const std::uint32_t n = lockstep_world_entity_count(w);
    lockstep_field out[32];
    char error[256] = "";
    std::size_t count = 77;
    CHECK(lockstep_world_entity_fields(nullptr, 0, out, 32, &count, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(count == 0);
    CHECK(std::string(error).find("NULL") != std::string::npos);
    CHECK(lockstep_world_entity_fields(w, 0, out, 32, nullptr, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    count = 77;
    CHECK(lockstep_world_entity_fields(w, 0, nullptr, 32, &count, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(count == 0);
    // Past the last entity, including UINT32_MAX (the module ABI's name for the globals: not here).
    for (const std::uint32_t e : {n, n + 1, UINT32_MAX}) {
      CAPTURE(e);
      count = 77;
      error[0] = '\0';
      CHECK(lockstep_world_entity_fields(w, e, out, 32, &count, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
      CHECK(count == 0);
      CHECK(std::string(error).find("entity " + std::to_string(e)) != std::string::npos);
    }
    CHECK(lockstep_world_entity_fields(w, n, out, 32, &count, nullptr, 0) == LOCKSTEP_ERROR_ARGUMENT);  // no error buffer
    count = 77;
    CHECK(lockstep_world_global_fields(nullptr, out, 32, &count, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(count == 0);
    CHECK(lockstep_world_global_fields(w, out, 32, nullptr, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(lockstep_world_global_fields(w, nullptr, 1, &count, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    // A truncated error sentence is still NUL-terminated.
    char tiny[6];
    CHECK(lockstep_world_entity_fields(w, n, out, 32, &count, tiny, sizeof tiny) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(std::strlen(tiny) == sizeof tiny - 1);
    // The world is usable after every refusal.
    CHECK(lockstep_world_entity_fields(w, n - 1, out, 32, &count, nullptr, 0) == LOCKSTEP_OK);
    CHECK(count > 0);
    lockstep_world_destroy(w);
  }
}
