// What every renderer shares: the colours of shapes and the fit of the world to a surface.
#include <algorithm>

#include "render.hpp"

namespace lockstep::render {

Rgb colour_of(const DrawShape& s, std::int32_t local) {
  if (s.player >= 0) return s.player == local ? Rgb{255, 200, 40} : Rgb{80, 170, 255};
  static constexpr Rgb kPalette[kPaletteSize] = {{150, 160, 175}, {255, 255, 255}, {230, 70, 60},  {80, 200, 90},
                                                 {240, 220, 60},  {60, 210, 220},  {210, 80, 200}, {90, 90, 110}};
  return kPalette[s.palette % kPaletteSize];
}

Viewport Viewport::fit(float world_w, float world_h, double w, double h) {
  Viewport v;
  v.scale = std::min(w / world_w, h / world_h);
  v.off_x = (w - world_w * v.scale) / 2;
  v.off_y = (h - world_h * v.scale) / 2;
  return v;
}

}  // namespace lockstep::render
