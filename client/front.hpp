// What the client does around its session on every wake: step the frames that arrived under the
// frame loop's time budget, draw at the frame rate (blending the previous and current state),
// hand the keyboard to the input source, keep the rejoin secret, and log a status line a second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/client_session.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/frame_loop.hpp"
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
  ClientSession& session_;
  std::unique_ptr<render::Renderer> renderer_;
  FrontConfig cfg_;
  FrameLoop loop_;
  FrameFigures figures_;
  PlayerTick keyboard_;   // the module's input from the latest drawn frame's controls ...
  Commands pending_;      // ... and the commands they issued, not yet handed to a tick
  ControlMemory memory_{};
  DrawList shapes_;
  std::int64_t last_frame_ = 0, next_status_ = 0;
  std::uint64_t frames_at_status_ = 0;
  double shown_fps_ = 0;
  bool leaving_ = false;
  bool secret_saved_ = false;

 public:
  ClientFront(ClientSession& session, std::unique_ptr<render::Renderer> renderer, FrontConfig cfg, std::int64_t now);
  /// One wake of the event loop at `now`: the session first, then stepping and drawing.
  Wake update(std::int64_t now, bool stop_requested);
  /// This tick's input and commands: the input from the latest drawn frame's controls (sampled on
  /// every tick until the next frame), and the commands issued since the last tick, as many as
  /// one tick takes (the rest go with the next ticks).
  void take_input(PlayerTick* out);
  [[nodiscard]] const FrameFigures& figures() const { return figures_; }
  [[nodiscard]] render::Renderer* renderer() { return renderer_.get(); }

 private:
  void leave(const std::string& why);
  void save_secret();
  void draw_frame(std::int64_t now);
  void status_line(std::int64_t now);
};

}  // namespace lockstep
