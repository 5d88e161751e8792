// The SDL2 window: discs drawn as filled polygons at the display rate, the heads-up figures in
// the window title, and arrow keys or WASD to steer. Built only when SDL2 is found.
#include "render.hpp"

#ifdef LOCKSTEP_HAVE_SDL
#include <SDL.h>

#include <cmath>
#include <cstdio>

#include "lockstep/state_hash.hpp"

namespace lockstep::render {
namespace {

constexpr int kSegments = 16;

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

  void draw(const std::vector<DrawDisc>& discs, float width, float height, const Hud& hud) override {
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
    verts_.clear();
    for (const DrawDisc& d : discs) add_disc(v, d, hud.slot);
    SDL_RenderGeometry(renderer_, nullptr, verts_.data(), static_cast<int>(verts_.size()), nullptr, 0);
    for (const DrawDisc& d : discs) {  // heading markers
      if (d.player < 0) continue;
      SDL_SetRenderDrawColor(renderer_, 255, 255, 255, 255);
      const double hx = d.x + std::cos(d.heading) * d.radius * 1.6, hy = d.y + std::sin(d.heading) * d.radius * 1.6;
      SDL_RenderDrawLineF(renderer_, static_cast<float>(v.x(d.x)), static_cast<float>(v.y(d.y)),
                          static_cast<float>(v.x(hx)), static_cast<float>(v.y(hy)));
    }
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
  void add_disc(const Viewport& v, const DrawDisc& d, std::int32_t local) {
    SDL_Color c{150, 160, 175, 255};
    if (d.player >= 0) c = d.player == local ? SDL_Color{255, 200, 40, 255} : SDL_Color{80, 170, 255, 255};
    const float cx = static_cast<float>(v.x(d.x)), cy = static_cast<float>(v.y(d.y));
    const float r = static_cast<float>(d.radius * v.scale);
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
