#include "front.hpp"

#include <cstdlib>
#include <fstream>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

ClientFront::ClientFront(Client& client, std::unique_ptr<render::Renderer> renderer, FrontConfig cfg,
                         std::int64_t now)
    : client_(client), renderer_(std::move(renderer)), cfg_(std::move(cfg)), last_frame_(now),
      next_status_(now + 1'000'000'000) {}

Wake ClientFront::update(std::int64_t now, bool stop_requested) {
  if (stop_requested) leave("stopped by the user");
  // Frames at the frame rate on a schedule that never drifts (a late frame does not push the next
  // one back); uncapped drawing follows the session's wakes instead of spinning.
  bool draw_now = false;
  if (client_.current() && cfg_.drawing) {
    if (next_draw_ < 0) next_draw_ = now;
    draw_now = cfg_.frame_period_ns <= 0 || now >= next_draw_;
  }
  // The frame's keys become the input before the session samples the ticks due now: a key pressed
  // since the last frame is in this frame's ticks and, predicting, on screen in this frame (read
  // after the update, it waited a frame).
  if (draw_now) take_keys(now);
  const std::int64_t wake = client_.update(now);
  save_secret();
  std::int64_t draw_wake = INT64_MAX;
  if (draw_now && client_.current()) draw_frame(now);
  if (client_.current() && cfg_.drawing && cfg_.frame_period_ns > 0) {
    if (draw_now) next_draw_ += cfg_.frame_period_ns * ((now - next_draw_) / cfg_.frame_period_ns + 1);
    draw_wake = next_draw_;
  }
  if (now >= next_status_) status_line(now);
  return Wake{std::min({wake, draw_wake, next_status_})};
}

void ClientFront::leave(const std::string& why) {
  if (leaving_) return;
  leaving_ = true;
  client_.leave(why);
}

// The rejoin secret goes to --rejoin-file as soon as the welcome brings it.
void ClientFront::save_secret() {
  if (secret_saved_ || client_.rejoin_secret().empty()) return;
  secret_saved_ = true;
  if (cfg_.rejoin_file.empty()) return;
  std::ofstream out(cfg_.rejoin_file, std::ios::trunc);
  out << client_.rejoin_secret() << "\n";
  if (!out) LOCKSTEP_LOG_WARN("cannot write --rejoin-file %s", cfg_.rejoin_file.c_str());
}

// The latest keys become the input sampled on every tick until the next frame, and the commands
// they issue go to the client once.
void ClientFront::take_keys(std::int64_t now) {
  if (!renderer_) return;
  const bool predicted = client_.predicted() != nullptr;
  const Simulation& current = predicted ? *client_.predicted() : *client_.current();
  const render::Keys keys = renderer_->poll_keys(now);
  keyboard_ = blank_tick(*cfg_.module);
  Controls controls = keys.controls;
  controls.world_width = current.width();
  controls.world_height = current.height();
  cfg_.module->from_controls(controls, memory_, &keyboard_);
  keyboard_.input.resize(cfg_.module->input_size, 0);
  client_.set_input(keyboard_.input);
  for (std::size_t i = 0; i < keyboard_.commands.size(); ++i)
    if (!client_.add_command(keyboard_.commands.at(i))) ++figures_.commands_dropped;  // over what a player may queue
  if (keys.quit) leave("the player quit");
}

// One drawn frame of the world as the update left it.
void ClientFront::draw_frame(std::int64_t now) {
  if (figures_.frames > 0 && cfg_.frame_period_ns > 0)
    figures_.jitter.add_us(std::llabs(now - last_frame_ - cfg_.frame_period_ns) / 1000);
  last_frame_ = now;
  ++figures_.frames;
  // With prediction the view is the predicted world (own input at once), else the verified one.
  const bool predicted = client_.predicted() != nullptr;
  const double alpha = predicted ? client_.predicted_alpha(now) : client_.alpha(now);
  if (!renderer_) return;
  const ClientSession& session = client_.session();
  const Simulation& current = predicted ? *client_.predicted() : *client_.current();
  const Simulation& previous = predicted ? *client_.predicted_previous() : *client_.previous();
  current.draw(previous, static_cast<float>(alpha), shapes_);
  const render::Hud hud{session.executed_tick(), shown_fps_,          alpha,
                        session.stats().rtt_ms,  session.frames_buffered(), session.last_hash(),
                        session.desynced(),      session.slot(),
                        cfg_.module->controls_help};
  renderer_->draw(shapes_, current.width(), current.height(), hud);
}

void ClientFront::status_line(std::int64_t now) {
  (void)now;
  shown_fps_ = static_cast<double>(figures_.frames - frames_at_status_);
  frames_at_status_ = figures_.frames;
  const ClientSession& session = client_.session();
  if (session.phase() == ClientSession::Phase::Running && cfg_.status_lines)
    LOCKSTEP_LOG_INFO("tick %u fps %.0f buffered %zu rtt %u ms playout %.1f ms hash %s%s", session.executed_tick(),
                      shown_fps_, session.frames_buffered(), session.stats().rtt_ms,
                      static_cast<double>(client_.figures().playout_ns) / 1e6, hash_hex(session.last_hash()).c_str(),
                      session.desynced() ? " DESYNCED" : "");
  next_status_ += 1'000'000'000;
}

}  // namespace lockstep
