// A module from a shared library (tests/modules/walkers.c, plain C) behind the Simulation
// interface: refusals of libraries that are not modules, then the contract and the desync probe.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstring>

#include "fma_scan.hpp"
#include "library_file.hpp"
#include "libm_route.hpp"
#include "lockstep/detmath.h"

#include "lockstep/desync_probe.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "support/localize.hpp"

using namespace lockstep;

TEST_SUITE("core/module-lib") {
  TEST_CASE("a C module library loads once, keeps the Simulation contract and its desyncs are localized") {
    std::string error;
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/nothing-here.so", &error) == nullptr);
    CHECK(error.find("cannot load it") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_no_entry.so", &error) == nullptr);
    CHECK(error.find("not a lockstep module") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_abi99.so", &error) == nullptr);
    CHECK(error.find("speaks module ABI version 99") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_uncovered_typo.so", &error) == nullptr);
    CHECK_MESSAGE(error.find("its UNCOVERED list names \"box2d\", which is no library it links (it links none besides") !=
                      std::string::npos,
                  error);
    const Module* m = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers.so", &error);
    REQUIRE_MESSAGE(m != nullptr, error);
    CHECK(m->name == "walkers");
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers.so", &error) == m);  // the same library: the same module
    // Another build of it loads beside it (bisect compares two), its worlds its own.
    const Module* other = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_rules2.so", &error);
    REQUIRE_MESSAGE(other != nullptr, error);
    CHECK(other != m);
    CHECK(other->build_id != m->build_id);

    WorldParams world;
    world.players = 3;
    REQUIRE(m->parse_world("seed=9", &world, &error));
    CHECK(m->settings_text(world.settings) == "seed=9");
    CHECK_FALSE(m->parse_world("speed=2", &world, &error));
    auto a = m->create(world);
    REQUIRE(a != nullptr);
    auto b = a->clone();
    auto without = a->clone();  // the same frames with their commands left out
    const Scenario sc{m, world, 0};
    std::size_t commands = 0;
    for (Tick t = 1; t <= 200; ++t) {
      InputFrame f = scenario_frame(sc, t);
      CHECK(f.input_size == 2);
      commands += f.commands.size();
      a->step(f);
      b->step(f);
      REQUIRE(a->hash() == b->hash());
      f.commands.clear();
      f.command_bytes.clear();
      without->step(f);
    }
    CHECK(commands == 6);  // each of 3 bots on ticks 97 and 194
    CHECK(without->hash() != a->hash());  // the module read them
    CHECK(a->tick() == 200);
    std::vector<std::uint8_t> bytes;
    a->serialize(bytes);
    CHECK(a->hash() == hash_bytes(bytes));
    auto c = m->create(world);
    REQUIRE(c->deserialize(bytes));
    CHECK(c->hash() == a->hash());
    CHECK_FALSE(c->deserialize(std::vector<std::uint8_t>(7, 0)));  // untrusted bytes refused, state kept
    CHECK(c->hash() == a->hash());
    CHECK(a->fingerprint() == c->fingerprint());
    DrawList shapes;
    a->draw(*b, 0.5f, shapes);
    CHECK(shapes.size() == 4);  // a label and three walkers
    CHECK(shapes[0].kind == DrawShape::Kind::Text);
    CHECK(shapes[0].text == "WALKERS");

    // A one-bit change to walker 2's velocity, found and named.
    b->assign(*a);
    b->perturb(2 * 2 + 1);
    REQUIRE(b->hash() != a->hash());
    const DesyncReport report = lockstep::testing::localize(*a, *b);
    CHECK(report.entity == 2);
    REQUIRE(report.server_fields.size() == 1);
    CHECK(report.server_fields[0].name == "vel");
  }

  TEST_CASE("a library the module lists as ROUTED calls lockstep's math, and only that library") {
    std::string error;
    // The probe (route_probe.c) loaded alone calls glibc's functions.
    void* probe = dlopen(LOCKSTEP_MODULE_DIR "/libroute_probe.so", RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(probe != nullptr, dlerror());
    auto probe_sinf = reinterpret_cast<float (*)(float)>(dlsym(probe, "route_probe_sinf"));
    auto probe_sincosf = reinterpret_cast<void (*)(float, float*, float*)>(dlsym(probe, "route_probe_sincosf"));
    auto probe_pow = reinterpret_cast<double (*)(double, double)>(dlsym(probe, "route_probe_pow"));
    auto probe_cosf_address = reinterpret_cast<void* (*)()>(dlsym(probe, "route_probe_cosf_address"));
    REQUIRE((probe_sinf && probe_sincosf && probe_pow && probe_cosf_address));
    CHECK(probe_cosf_address() != reinterpret_cast<void*>(&lockstep_cosf));
    // Inputs where glibc's float sin or cos is not the correctly rounded value on this CPU's path
    // or on the baseline x86-64 one (found by comparing them with lockstep's over [16, 128)).
    const float hard[] = {0x1.05d696p+5f, 0x1.1475b6p+4f, 0x1.ab6152p+5f, 0x1.8abf54p+6f, 0x1.000024p+4f, 0x1.46ba88p+6f};
    int glibc_differs = 0;
    for (const float x : hard) glibc_differs += probe_sinf(x) != lockstep_sinf(x);

    // A module whose ROUTED list names a library it does not link is refused, saying which.
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_routed_typo.so", &error) == nullptr);
    CHECK_MESSAGE(error.find("its ROUTED list names \"route_probe\", which is no library it links (it links libroute_probe.so;") !=
                      std::string::npos,
                  error);
    const Module* m = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_routed.so", &error);
    REQUIRE_MESSAGE(m != nullptr, error);
    // Its calls (PLT slots) and the function it takes as a pointer (a GOT slot) are lockstep's now.
    CHECK(probe_cosf_address() == reinterpret_cast<void*>(&lockstep_cosf));
    int differs = 0;
    for (const float x : hard) differs += probe_sinf(x) != lockstep_sinf(x);
    for (std::uint32_t i = 0; i < 20000; ++i) {
      const float x = static_cast<float>(i) * 0.0173f - 150.0f;
      float s = 0, c = 0, ls = 0, lc = 0;
      probe_sincosf(x, &s, &c);
      lockstep_sincosf(x, &ls, &lc);
      differs += std::memcmp(&s, &ls, 4) != 0 || std::memcmp(&c, &lc, 4) != 0;
      differs += probe_pow(1.0 + i * 1e-4, 2.5) != lockstep_pow(1.0 + i * 1e-4, 2.5);
    }
    CHECK(differs == 0);
    MESSAGE("glibc's sinf differed from the correctly rounded value on " << glibc_differs << " of 6 hard inputs before routing");
    // Nothing else is routed: this process's own sinf is still glibc's.
    CHECK(reinterpret_cast<void*>(static_cast<float (*)(float)>(&::sinf)) != reinterpret_cast<void*>(&lockstep_sinf));

    // What the routing did, and the one transcendental it left: sinh, which lockstep has not.
    module_lib::RoutedLibrary r;
    REQUIRE_MESSAGE(module_lib::route_libm("libroute_probe.so", &r, &error), error);
    CHECK(r.routed == std::vector<std::string>{"cosf", "pow", "sincosf", "sinf"});
    CHECK(r.left == std::vector<std::string>{"sinh"});
    CHECK_FALSE(module_lib::route_libm("libnot_loaded_here.so.3", &r, &error));
    CHECK(error.find("it is not loaded in this process") != std::string::npos);
    dlclose(probe);
  }

  TEST_CASE("a module's machine code and its fused multiply-adds are read at load") {
    std::string error;
    const Module* plain = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_plain.so", &error);
    REQUIRE_MESSAGE(plain != nullptr, error);
    const Module* fma = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_fma.so", &error);
    REQUIRE_MESSAGE(fma != nullptr, error);
    // One fingerprint (the same sources and build id), two machine codes: their GNU build ids.
    CHECK(plain->build_id == fma->build_id);
    CHECK(plain->code.size() == 40);
    CHECK(fma->code.size() == 40);
    CHECK(plain->code != fma->code);
    // The engine (wengine.c, compiled in) built with FMA contraction: a fused multiply-add; the plain build none.
    CHECK(plain->fma_instructions == 0);
    CHECK(fma->fma_instructions >= 1);
    MESSAGE("walkers_fma: " << fma->fma_instructions << " fused multiply-adds");
    // lockstep's own core is built without contraction (its AVX2 hash path included): none found
    // in the object that holds it (this test program, or the core's shared library), megabytes
    // of code where a byte-by-byte reading could be fooled by an immediate.
    Dl_info info{};
    REQUIRE(dladdr(reinterpret_cast<void*>(&lockstep_sinf), &info) != 0);
    void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!self) self = dlopen(nullptr, RTLD_NOW);  // linked into the program itself
    REQUIRE(self != nullptr);
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer (tools/sanitize.sh, a unity build) this program is about 40 MB of
    // instrumented code, and the byte-by-byte reading finds the pattern inside three RIP-relative
    // displacements (objdump finds no fused multiply-add): the core's code is checked in the
    // suite's own build, and the simulation's objects by the lint, which disassembles.
    MESSAGE("the program's own code, under AddressSanitizer: " << module_lib::fma_instructions(self)
                                                               << " byte patterns, not checked");
#else
    CHECK(module_lib::fma_instructions(self) == 0);
#endif
    dlclose(self);
    // A built-in module has no file: no code, not checked at join.
    CHECK(find_module("arena")->code.empty());
  }

  TEST_CASE("a module's machine code covers the libraries it opts out of its fingerprint") {
    // walkers_wengine links libwengine.so (no run path) and opts it out: the engine loaded first
    // by its path, the module's needed soname finds it.
    void* engine = dlopen(LOCKSTEP_MODULE_DIR "/wengine-plain/libwengine.so", RTLD_NOW | RTLD_GLOBAL);
    REQUIRE_MESSAGE(engine != nullptr, dlerror());
    std::string error;
    const Module* m = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_wengine.so", &error);
    REQUIRE_MESSAGE(m != nullptr, error);
    REQUIRE(m->libraries.size() == 1);
    CHECK(m->libraries[0].name == "libwengine.so");
    CHECK(m->libraries[0].build == "opted out");
    // Not the file's own build id: that and the engine's build, hashed.
    const std::string own = module_lib::module_code(dlopen(LOCKSTEP_MODULE_DIR "/libwalkers_wengine.so", RTLD_NOW | RTLD_NOLOAD),
                                                    LOCKSTEP_MODULE_DIR "/libwalkers_wengine.so");
    CHECK(own.size() == 40);
    CHECK(m->code.substr(0, 5) == "xxh3:");
    CHECK(m->code.size() == 21);
    CHECK(m->code != own);
    CHECK(m->fma_instructions == 0);  // neither the module nor this engine build has one
  }
  // e2e/join_mismatch's module: its serialization leaves the pulse out, so a late joiner's state,
  // loaded from the server's snapshot, parts from the server's at the first tick after the load.
  // The server localizes that desync from the states both sides hold for the tick (serialized,
  // ServerSimulation::state_at), where the pulse is out on both sides: the difference must reach a
  // declared field by then, whatever the tick of the join. (It did not at 43 of these 300 ticks: the
  // report said "outside fields" and the e2e test failed now and then.)
  TEST_CASE("a join snapshot without the pulse (walkers_broken2) parts in a declared field at the next tick, at any tick") {
    std::string error;
    const Module* m = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_broken2.so", &error);
    REQUIRE_MESSAGE(m != nullptr, error);
    WorldParams world;
    world.players = 2;
    REQUIRE(m->parse_world("seed=1", &world, &error));
    const Scenario sc{m, world, 0};
    auto server = m->create(world);
    const auto held = [&](const Simulation& s) {  // the state as a side holds it for a probe
      std::vector<std::uint8_t> bytes;
      s.serialize(bytes);
      auto h = m->create(world);
      REQUIRE(h->deserialize(bytes));
      return h;
    };
    int unlocalized = 0;
    for (Tick join = 1; join <= 300; ++join) {
      server->step(scenario_frame(sc, join));
      auto client = held(*server);  // the join snapshot
      auto next = server->clone();
      const InputFrame f = scenario_frame(sc, join + 1);
      next->step(f);
      client->step(f);
      REQUIRE(next->hash() != client->hash());
      auto theirs = held(*client);
      const DesyncReport r = lockstep::testing::localize(*held(*next), *theirs);
      if (r.where != "entity" && r.where != "global") ++unlocalized;
    }
    CHECK(unlocalized == 0);
  }
}
