// The SDL window renderer draws discs where the state says (pixels read back), under SDL's
// offscreen driver or a real X server (Xvfb) when DISPLAY is set. Built only with SDL2; without
// it ctest reports render/sdl as skipped (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#ifdef LOCKSTEP_HAVE_SDL

#include <array>
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
    const DrawList shapes{
        DrawShape::circle(25.0f, 25.0f, 5.0f, -1, 0),            // a neutral body, top left
        DrawShape::circle(75.0f, 60.0f, 6.0f, 0),                // the local player (slot 0)
        DrawShape::circle(70.0f, 20.0f, 4.0f, 1),                // another player
        DrawShape::rect(5.0f, 80.0f, 10.0f, 10.0f, -1, 2),       // red
        DrawShape::line(40.0f, 95.0f, 60.0f, 95.0f, -1, 3),      // green
        DrawShape::label(85.0f, 85.0f, 10.0f, "8", -1, 4),       // yellow, cells of 2 x 2 units
    };
    Hud hud;
    hud.slot = 0;
    r->draw(shapes, 100.0f, 100.0f, hud);
    auto at = [&](int x, int y) {
      std::array<std::uint8_t, 3> rgb{};
      REQUIRE(sdl_read_pixel(*r, x, y, rgb.data()));
      return rgb;
    };
    using C = std::array<std::uint8_t, 3>;
    const C background{16, 18, 24};
    CHECK(at(50, 50) == C{150, 160, 175});
    CHECK(at(150 - 4, 120 + 4) == C{255, 200, 40});
    CHECK(at(140 - 3, 40 + 3) == C{80, 170, 255});
    CHECK(at(20, 170) == C{230, 70, 60});
    CHECK(at(100, 190) == C{80, 200, 90});
    CHECK(at(171, 171) == C{240, 220, 60});  // the 8's top-left cell
    CHECK(at(175, 175) == background);       // its upper hole
    CHECK(at(100, 170) == background);
    r->end();
  }
}
#endif  // LOCKSTEP_HAVE_SDL
