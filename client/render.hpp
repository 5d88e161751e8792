// Renderers for lockstep-client: they draw a module's shapes (circles, rectangles, lines, text
// labels in world units) and report the local player's controls (keys held, the pointer), which
// the module turns into its input. Rendering never changes the simulation: it only reads
// DrawLists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep::render {

/// The heads-up figures drawn beside the world.
struct Hud {
  Tick tick = 0;
  double fps = 0;
  double alpha = 0;
  std::uint32_t rtt_ms = 0;
  std::size_t buffered = 0;
  std::uint64_t hash = 0;
  bool desynced = false;
  std::int32_t slot = -1;  ///< the local player's slot, -1 spectating
  std::string_view controls_help;  ///< the module's, e.g. "arrows/WASD steer"
};

/// What the player does this frame. q and Esc are the renderers' quit keys: they never reach a module.
struct Keys {
  Controls controls;
  bool quit = false;
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  /// Prepares the terminal or window; false with `error` set when it cannot.
  virtual bool begin(std::string* error) = 0;
  /// Draws one frame of `shapes`, in order, in a world of `width` x `height` units.
  virtual void draw(const DrawList& shapes, float width, float height, const Hud& hud) = 0;
  /// Reads the keyboard (and the pointer) at monotonic time `now_ns`.
  virtual Keys poll_keys(std::int64_t now_ns) = 0;
  /// Restores the terminal or closes the window (also done by the destructor).
  virtual void end() = 0;
};

/// ANSI terminal renderer on stdout, keys from stdin.
std::unique_ptr<Renderer> make_tty_renderer();
/// SDL2 window renderer; nullptr when lockstep was built without SDL2. `vsync` syncs presents.
std::unique_ptr<Renderer> make_sdl_renderer(bool vsync, int width_px, int height_px);
bool sdl_available();

/// Test access to an SDL renderer's last frame: RGB of pixel (x, y). False if not SDL.
bool sdl_read_pixel(Renderer& r, int x, int y, std::uint8_t rgb[3]);

/// A shape's colour as RGB: its player's (`local` stands out) or its palette entry.
struct Rgb {
  std::uint8_t r, g, b;
};
Rgb colour_of(const DrawShape& s, std::int32_t local);

/// Maps world units to a drawing surface of w x h cells or pixels, keeping the aspect ratio.
struct Viewport {
  double scale = 1, off_x = 0, off_y = 0;
  static Viewport fit(float world_w, float world_h, double w, double h);
  [[nodiscard]] double x(double wx) const { return off_x + wx * scale; }
  [[nodiscard]] double y(double wy) const { return off_y + wy * scale; }
};

}  // namespace lockstep::render
