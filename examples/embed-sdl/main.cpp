// embed-sdl: a game that keeps its own loop (144 frames a second by default), its own clock
// (std::chrono::steady_clock) and its own renderer (SDL2), and plays a lockstep session through
// lockstep::Client. Its simulation is the orbits module, passed in-process as a table; the game
// reads the module's own state (orbits.h) and draws it between the previous and current
// confirmed ticks at the client's alpha. It prints its figures when the session ends.
//   embed-sdl --connect HOST:PORT [--name NAME] [--fps 144] [--ticks N] [--hash-log FILE]
#include <SDL.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <lockstep/client.hpp>
#include <lockstep/hash_log.hpp>

#include "orbits.h"

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// World coordinates (-100..100) to the window's pixels.
SDL_FRect to_screen(double x, double y, float size, int w, int h) {
  const float sx = static_cast<float>((x + 100.0) / 200.0 * w), sy = static_cast<float>((y + 100.0) / 200.0 * h);
  return SDL_FRect{sx - size / 2, sy - size / 2, size, size};
}

}  // namespace

int main(int argc, char** argv) {
  std::string connect = "127.0.0.1:7777", name = "sdl", hash_log_path;
  double fps = 144;
  lockstep::Tick last_tick = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--connect") connect = v;
    else if (a == "--name") name = v;
    else if (a == "--fps") fps = std::atof(v.c_str());
    else if (a == "--ticks") last_tick = static_cast<lockstep::Tick>(std::strtoul(v.c_str(), nullptr, 10));
    else if (a == "--hash-log") hash_log_path = v;
  }
  std::string error;
  const lockstep::Module* module = lockstep::module_from_table(orbits_table(), &error);
  if (!module) {
    std::fprintf(stderr, "embed-sdl: %s\n", error.c_str());
    return 2;
  }
  lockstep::ClientOptions options;
  const auto colon = connect.rfind(':');
  options.session.host = connect.substr(0, colon);
  options.session.port = static_cast<std::uint16_t>(std::atoi(connect.substr(colon + 1).c_str()));
  options.session.name = name;
  options.session.last_tick = last_tick;
  options.session.factory = module->create;
  options.input_size = module->input_size;
  lockstep::Error err;
  auto client = lockstep::Client::create(options, &err);
  if (!client) {
    std::fprintf(stderr, "embed-sdl: %s\n", err.detail.c_str());
    return lockstep::exit_code(err.kind);
  }
  lockstep::HashLogWriter hash_log;
  if (!hash_log_path.empty() && hash_log.open(hash_log_path)) client->session().set_hash_log(&hash_log);

  if (SDL_Init(SDL_INIT_VIDEO) != 0) {
    std::fprintf(stderr, "embed-sdl: %s\n", SDL_GetError());
    return 1;
  }
  SDL_Window* window = SDL_CreateWindow("embed-sdl", SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, 640, 640, 0);
  SDL_Renderer* renderer = window ? SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE) : nullptr;
  if (!renderer) {
    std::fprintf(stderr, "embed-sdl: %s\n", SDL_GetError());
    return 1;
  }

  const std::int64_t period = static_cast<std::int64_t>(1e9 / fps);
  std::int64_t next_frame = now_ns(), started = next_frame;
  std::uint64_t frames = 0;
  bool quit = false;
  while (!client->finished()) {
    const std::int64_t now = now_ns();
    client->update(now);
    for (const lockstep::SessionEvent& e : client->take_events())
      std::fprintf(stderr, "embed-sdl: %s tick %u slot %d %s %s\n", lockstep::to_string(e.kind), e.tick, e.slot,
                   e.name.c_str(), e.detail.c_str());
    SDL_Event ev;
    while (SDL_PollEvent(&ev))
      if (ev.type == SDL_QUIT) quit = true;
    if (quit) client->leave("the player closed the window");
    // The game's input: arrows turn and thrust (orbits' two bytes), held until they change.
    const std::uint8_t* keys = SDL_GetKeyboardState(nullptr);
    const bool left = keys[SDL_SCANCODE_LEFT], right = keys[SDL_SCANCODE_RIGHT];
    const std::uint8_t input[2] = {static_cast<std::uint8_t>(left == right ? 0 : left ? 1 : 2),
                                   static_cast<std::uint8_t>(keys[SDL_SCANCODE_UP] ? 1 : 0)};
    client->set_input(input);
    if (now >= next_frame) {
      // Draw the game's own state: ships and moons between the previous and current ticks.
      const double a = client->alpha(now);
      const auto* cur = client->current() ? static_cast<const lockstep_sim*>(client->current()->native_state()) : nullptr;
      const auto* prev = client->previous() ? static_cast<const lockstep_sim*>(client->previous()->native_state()) : nullptr;
      SDL_SetRenderDrawColor(renderer, 8, 8, 24, 255);
      SDL_RenderClear(renderer);
      if (cur && prev) {
        SDL_SetRenderDrawColor(renderer, 255, 220, 80, 255);
        const SDL_FRect star = to_screen(0, 0, 16, 640, 640);
        SDL_RenderFillRectF(renderer, &star);
        SDL_SetRenderDrawColor(renderer, 160, 160, 180, 255);
        for (std::uint32_t m = 0; m < cur->moons; ++m) {
          const Body &p = prev->moon[m], &c = cur->moon[m];
          const SDL_FRect r = to_screen(p.x + (c.x - p.x) * a, p.y + (c.y - p.y) * a, 6, 640, 640);
          SDL_RenderFillRectF(renderer, &r);
        }
        SDL_SetRenderDrawColor(renderer, 80, 220, 255, 255);
        for (std::uint32_t s = 0; s < cur->players; ++s) {
          const Ship &p = prev->ship[s], &c = cur->ship[s];
          const SDL_FRect r = to_screen(p.x + (c.x - p.x) * a, p.y + (c.y - p.y) * a, 8, 640, 640);
          SDL_RenderFillRectF(renderer, &r);
        }
      }
      SDL_RenderPresent(renderer);
      ++frames;
      next_frame += period * ((now - next_frame) / period + 1);  // a schedule that never drifts
    }
    const std::int64_t wake = std::min(next_frame, now + lockstep::kTickNs);
    const std::int64_t sleep_ns = wake - now_ns();
    if (sleep_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
  }
  const lockstep::ClientFigures f = client->figures();
  const double seconds = static_cast<double>(now_ns() - started) / 1e9;
  std::printf("{\"exit\": %d, \"tick\": %u, \"frames\": %llu, \"fps\": %.1f, \"frames_at_alpha_1\": %llu, "
              "\"alpha_clamped_share\": %.4f, \"playout_ms\": %.2f, \"rtt_ms\": %u}\n",
              client->exit_code(), f.tick, static_cast<unsigned long long>(frames), static_cast<double>(frames) / seconds,
              static_cast<unsigned long long>(f.frames_clamped),
              f.frames_drawn ? static_cast<double>(f.frames_clamped) / static_cast<double>(f.frames_drawn) : 0.0,
              static_cast<double>(f.playout_ns) / 1e6, f.rtt_ms);
  SDL_DestroyRenderer(renderer);
  SDL_DestroyWindow(window);
  SDL_Quit();
  return client->exit_code();
}
