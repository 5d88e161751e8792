// What the stock client does around the embedding API's Client (client.hpp) on every wake, as a
// game would: update the client (it steps the frames whose playout time has come, within its
// budget), draw at the frame rate between the previous and current state at the client's alpha,
// hand the keyboard's input and commands to the client, keep the rejoin secret, and log a status
// line a second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/client.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/summary.hpp"
#include "render.hpp"

namespace lockstep {

struct FrontConfig {
  const Module* module = nullptr;    ///< turns the player's controls into its input, names them in the heads-up line
  std::int64_t frame_period_ns = 0;  ///< 0: uncapped
  bool drawing = false;              ///< draw frames (a renderer, or an explicit --fps)
  bool status_lines = true;          ///< log a status line every second (not while a tty renderer owns the terminal)
  std::string rejoin_file;           ///< where to keep the rejoin secret ("" = nowhere)
};

class ClientFront {
 private:
  Client& client_;
  std::unique_ptr<render::Renderer> renderer_;
  FrontConfig cfg_;
  FrameFigures figures_;
  PlayerTick keyboard_;   // the module's input and commands from the latest drawn frame's controls
  ControlMemory memory_{};
  std::int64_t next_draw_ = -1;  // the frame schedule: deadlines one period apart, never drifting
  DrawList shapes_;
  std::int64_t last_frame_ = 0, next_status_ = 0;
  std::uint64_t frames_at_status_ = 0;
  double shown_fps_ = 0;
  bool leaving_ = false;
  bool secret_saved_ = false;

 public:
  ClientFront(Client& client, std::unique_ptr<render::Renderer> renderer, FrontConfig cfg, std::int64_t now);
  /// One wake of the event loop at `now`: the session first, then stepping and drawing.
  Wake update(std::int64_t now, bool stop_requested);
  [[nodiscard]] const FrameFigures& figures() const { return figures_; }
  [[nodiscard]] render::Renderer* renderer() { return renderer_.get(); }

 private:
  void leave(const std::string& why);
  void save_secret();
  void take_keys(std::int64_t now);
  void draw_frame(std::int64_t now);
  void status_line(std::int64_t now);
};

}  // namespace lockstep
