// The SDL window renderer draws discs where the state says (pixels read back), under SDL's
// offscreen driver or a real X server (Xvfb) when DISPLAY is set. Built only with SDL2; without
// it ctest reports render/sdl as skipped (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#ifdef LOCKSTEP_HAVE_SDL

#include <cstdlib>

#include "render.hpp"

using namespace lockstep;
using namespace lockstep::render;

TEST_SUITE("render/sdl") {
  TEST_CASE("a frame is drawn with the discs where the state puts them") {
    if (!std::getenv("DISPLAY")) setenv("SDL_VIDEODRIVER", "offscreen", 0);
    auto r = make_sdl_renderer(false, 200, 200);
    std::string error;
    REQUIRE_MESSAGE(r->begin(&error), error);
    // A 100 x 100 world on 200 x 200 pixels: 2 pixels per unit.
    const std::vector<DrawDisc> discs{
        {25.0f, 25.0f, 5.0f, 0.0f, -1},  // passive body, top left
        {75.0f, 60.0f, 6.0f, 0.0f, 0},   // the local player (slot 0)
        {70.0f, 20.0f, 4.0f, 0.0f, 1},   // another player
    };
    Hud hud;
    hud.slot = 0;
    r->draw(discs, 100.0f, 100.0f, hud);
    std::uint8_t body[3], local[3], other[3], empty[3];
    REQUIRE(sdl_read_pixel(*r, 50, 50, body));
    REQUIRE(sdl_read_pixel(*r, 150 - 4, 120 + 4, local));  // inside the local disc, off its heading line
    REQUIRE(sdl_read_pixel(*r, 140 - 3, 40 + 3, other));
    REQUIRE(sdl_read_pixel(*r, 100, 170, empty));
    CHECK(body[0] == 150);
    CHECK(body[2] == 175);
    CHECK(local[0] == 255);
    CHECK(local[1] == 200);
    CHECK(other[2] == 255);
    CHECK(empty[0] == 16);
    CHECK(empty[2] == 24);
    r->end();
  }
}
#endif  // LOCKSTEP_HAVE_SDL
