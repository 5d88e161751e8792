// The SDL2 window: a module's shapes drawn at the display rate (circles as filled polygons,
// rectangles, lines, text in a 3x5 pixel font scaled to the label's height), the heads-up
// figures in the window title, and the keys held and the mouse handed on as the player's
// controls. Built only when SDL2 is found.
#include "render.hpp"

#ifdef LOCKSTEP_HAVE_SDL
#include <SDL.h>

#include <cmath>
#include <cstdio>

#include "lockstep/state_hash.hpp"

namespace lockstep::render {
namespace {

constexpr int kSegments = 16;

// A 3x5 font: per glyph five rows of three bits, the top row in the highest bits. Letters are
// drawn as capitals; a character without a glyph is drawn as a box.
std::uint16_t glyph(char c) {
  static constexpr std::uint16_t kDigits[10] = {0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF};
  static constexpr std::uint16_t kLetters[26] = {
      0x2BED, 0x6BAE, 0x3923, 0x6B6E, 0x79A7, 0x79A4, 0x396B, 0x5BED, 0x7497, 0x126A, 0x5BAD, 0x4927, 0x5FED,
      0x6B6D, 0x2B6A, 0x6BA4, 0x2B73, 0x6BAD, 0x388E, 0x7492, 0x5B6F, 0x5B6A, 0x5BFD, 0x5AAD, 0x5A92, 0x72A7};
  if (c >= '0' && c <= '9') return kDigits[c - '0'];
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  if (c >= 'A' && c <= 'Z') return kLetters[c - 'A'];
  switch (c) {
    case ' ': return 0;
    case '-': return 0x01C0;
    case '.': return 0x0002;
    case ':': return 0x0410;
    default: return 0x7B6F;  // a box
  }
}

class SdlRenderer final : public Renderer {
 public:
  SdlRenderer(bool vsync, int w, int h) : vsync_(vsync), w_(w), h_(h) {
    // Rendering is not simulation: the C library's cos and sin are fine here.
    for (int i = 0; i <= kSegments; ++i) {
      const double a = 2.0 * M_PI * i / kSegments;
      cos_[i] = static_cast<float>(std::cos(a));
      sin_[i] = static_cast<float>(std::sin(a));
    }
  }
  ~SdlRenderer() override { end(); }

  bool begin(std::string* error) override {
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
      *error = std::string("SDL cannot start: ") + SDL_GetError();
      return false;
    }
    window_ = SDL_CreateWindow("lockstep", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, w_, h_, 0);
    if (!window_) {
      *error = std::string("SDL cannot open a window: ") + SDL_GetError();
      return false;
    }
    renderer_ = SDL_CreateRenderer(window_, -1, vsync_ ? SDL_RENDERER_PRESENTVSYNC : 0);
    if (!renderer_) renderer_ = SDL_CreateRenderer(window_, -1, SDL_RENDERER_SOFTWARE);
    if (!renderer_) {
      *error = std::string("SDL cannot create a renderer: ") + SDL_GetError();
      return false;
    }
    return true;
  }

  void draw(const DrawList& shapes, float width, float height, const Hud& hud) override {
    const Viewport v = Viewport::fit(width, height, w_, h_);
    view_ = v;
    world_w_ = width;
    world_h_ = height;
    SDL_SetRenderDrawColor(renderer_, 16, 18, 24, 255);
    SDL_RenderClear(renderer_);
    SDL_SetRenderDrawColor(renderer_, 90, 90, 110, 255);
    SDL_Rect border{static_cast<int>(v.x(0)), static_cast<int>(v.y(0)), static_cast<int>(width * v.scale),
                    static_cast<int>(height * v.scale)};
    SDL_RenderDrawRect(renderer_, &border);
    // Runs of circles go out as one batch of triangles; anything else flushes the batch first,
    // so the list's order is the drawing order.
    verts_.clear();
    for (const DrawShape& s : shapes) {
      if (s.kind == DrawShape::Kind::Circle) {
        add_circle(v, s, colour_of(s, hud.slot));
        continue;
      }
      flush_circles();
      const Rgb c = colour_of(s, hud.slot);
      SDL_SetRenderDrawColor(renderer_, c.r, c.g, c.b, 255);
      switch (s.kind) {
        case DrawShape::Kind::Rect: {
          const SDL_FRect r{static_cast<float>(v.x(s.x)), static_cast<float>(v.y(s.y)), static_cast<float>(s.a * v.scale),
                            static_cast<float>(s.b * v.scale)};
          SDL_RenderFillRectF(renderer_, &r);
          break;
        }
        case DrawShape::Kind::Line:
          SDL_RenderDrawLineF(renderer_, static_cast<float>(v.x(s.x)), static_cast<float>(v.y(s.y)),
                              static_cast<float>(v.x(s.a)), static_cast<float>(v.y(s.b)));
          break;
        case DrawShape::Kind::Text: draw_text(v, s); break;
        case DrawShape::Kind::Circle: break;
      }
    }
    flush_circles();
    SDL_RenderPresent(renderer_);
    if (++frames_ % 15 == 1) {
      char title[256];
      std::snprintf(title, sizeof title, "lockstep  tick %u  fps %.0f  alpha %.2f  rtt %u ms  buffer %zu  hash %s  %s",
                    hud.tick, hud.fps, hud.alpha, hud.rtt_ms, hud.buffered, hash_hex(hud.hash).c_str(),
                    hud.desynced ? "DESYNC" : "in sync");
      SDL_SetWindowTitle(window_, title);
    }
  }

  Keys poll_keys(std::int64_t) override {
    Keys k;
    SDL_Event e;
    while (SDL_PollEvent(&e)) {
      if (e.type == SDL_QUIT) k.quit = true;
      if (e.type == SDL_KEYDOWN && (e.key.keysym.sym == SDLK_ESCAPE || e.key.keysym.sym == SDLK_q)) k.quit = true;
    }
    const Uint8* s = SDL_GetKeyboardState(nullptr);
    const std::pair<SDL_Scancode, Key> named[] = {{SDL_SCANCODE_UP, Key::Up},       {SDL_SCANCODE_DOWN, Key::Down},
                                                  {SDL_SCANCODE_LEFT, Key::Left},   {SDL_SCANCODE_RIGHT, Key::Right},
                                                  {SDL_SCANCODE_SPACE, Key::Space}, {SDL_SCANCODE_RETURN, Key::Enter}};
    for (const auto& [code, key] : named)
      if (s[code]) k.controls.hold(key);
    for (int i = 0; i < 26; ++i)
      if (s[SDL_SCANCODE_A + i]) k.controls.hold(static_cast<Key>(static_cast<int>(Key::A) + i));
    // The pointer, in world units through the last frame's viewport.
    int mx = 0, my = 0;
    const Uint32 buttons = SDL_GetMouseState(&mx, &my);
    if (view_.scale > 0) {
      k.controls.pointer_x = static_cast<float>((mx - view_.off_x) / view_.scale);
      k.controls.pointer_y = static_cast<float>((my - view_.off_y) / view_.scale);
      k.controls.pointer_valid = k.controls.pointer_x >= 0 && k.controls.pointer_y >= 0 &&
                                 k.controls.pointer_x <= world_w_ && k.controls.pointer_y <= world_h_;
      k.controls.pointer_down = (buttons & SDL_BUTTON(SDL_BUTTON_LEFT)) != 0;
      k.controls.secondary_down = (buttons & SDL_BUTTON(SDL_BUTTON_RIGHT)) != 0;
    }
    return k;
  }

  void end() override {
    if (renderer_) SDL_DestroyRenderer(renderer_);
    if (window_) SDL_DestroyWindow(window_);
    if (renderer_ || window_) SDL_Quit();
    renderer_ = nullptr;
    window_ = nullptr;
  }

  bool read_pixel(int x, int y, std::uint8_t rgb[3]) {
    SDL_Rect r{x, y, 1, 1};
    Uint32 px = 0;
    if (SDL_RenderReadPixels(renderer_, &r, SDL_PIXELFORMAT_RGBA8888, &px, 4) != 0) return false;
    rgb[0] = static_cast<std::uint8_t>(px >> 24);
    rgb[1] = static_cast<std::uint8_t>(px >> 16);
    rgb[2] = static_cast<std::uint8_t>(px >> 8);
    return true;
  }

 private:
  void flush_circles() {
    if (verts_.empty()) return;
    SDL_RenderGeometry(renderer_, nullptr, verts_.data(), static_cast<int>(verts_.size()), nullptr, 0);
    verts_.clear();
  }

  // Each character a 3x5 grid of filled cells (plus one cell of spacing), `a` world units high.
  void draw_text(const Viewport& v, const DrawShape& s) {
    const float cell = static_cast<float>(s.a * v.scale / 5.0);
    float x = static_cast<float>(v.x(s.x));
    const float y = static_cast<float>(v.y(s.y));
    for (const char ch : s.text) {
      const std::uint16_t g = glyph(ch);
      for (int row = 0; row < 5; ++row)
        for (int col = 0; col < 3; ++col)
          if (g >> (14 - row * 3 - col) & 1u) {
            const SDL_FRect r{x + static_cast<float>(col) * cell, y + static_cast<float>(row) * cell, cell, cell};
            SDL_RenderFillRectF(renderer_, &r);
          }
      x += 4 * cell;
    }
  }

  void add_circle(const Viewport& v, const DrawShape& s, Rgb rgb) {
    const SDL_Color c{rgb.r, rgb.g, rgb.b, 255};
    const float cx = static_cast<float>(v.x(s.x)), cy = static_cast<float>(v.y(s.y));
    const float r = static_cast<float>(s.a * v.scale);
    for (int i = 0; i < kSegments; ++i) {
      verts_.push_back({{cx, cy}, c, {0, 0}});
      verts_.push_back({{cx + r * cos_[i], cy + r * sin_[i]}, c, {0, 0}});
      verts_.push_back({{cx + r * cos_[i + 1], cy + r * sin_[i + 1]}, c, {0, 0}});
    }
  }

  bool vsync_;
  int w_, h_;
  SDL_Window* window_ = nullptr;
  Viewport view_{0, 0, 0};  // the last frame's, for the pointer
  float world_w_ = 0, world_h_ = 0;
  SDL_Renderer* renderer_ = nullptr;
  std::vector<SDL_Vertex> verts_;
  float cos_[kSegments + 1], sin_[kSegments + 1];
  std::uint64_t frames_ = 0;
};

}  // namespace

std::unique_ptr<Renderer> make_sdl_renderer(bool vsync, int w, int h) { return std::make_unique<SdlRenderer>(vsync, w, h); }
bool sdl_available() { return true; }
bool sdl_read_pixel(Renderer& r, int x, int y, std::uint8_t rgb[3]) {
  auto* s = dynamic_cast<SdlRenderer*>(&r);
  return s && s->read_pixel(x, y, rgb);
}

}  // namespace lockstep::render

#else

namespace lockstep::render {
std::unique_ptr<Renderer> make_sdl_renderer(bool, int, int) { return nullptr; }
bool sdl_available() { return false; }
bool sdl_read_pixel(Renderer&, int, int, std::uint8_t[3]) { return false; }
}  // namespace lockstep::render

#endif
