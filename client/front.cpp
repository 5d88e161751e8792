#include "front.hpp"

#include <cstdlib>
#include <fstream>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/timestep.hpp"

namespace lockstep {

namespace {
FrameLoopConfig loop_config(std::int64_t frame_period_ns) {
  FrameLoopConfig c;
  c.frame_period_ns = frame_period_ns;
  return c;
}
}  // namespace

ClientFront::ClientFront(ClientSession& session, std::unique_ptr<render::Renderer> renderer, FrontConfig cfg,
                         std::int64_t now)
    : session_(session),
      renderer_(std::move(renderer)),
      cfg_(std::move(cfg)),
      loop_(loop_config(cfg_.frame_period_ns)),
      last_frame_(now),
      next_status_(now + 1'000'000'000) {}

Wake ClientFront::update(std::int64_t now, bool stop_requested) {
  if (stop_requested) leave("stopped by the user");
  const std::int64_t wake = session_.update(now);
  save_secret();
  std::int64_t loop_wake = INT64_MAX;
  if (session_.simulation()) {
    const FramePass r = loop_.pass(now, session_.frames_buffered(), [&] { return session_.execute_next(now); }, monotonic_ns);
    if (r.report)
      LOCKSTEP_LOG_WARN("cannot keep up: stepping takes %.1f ms per %lld ms tick (%zu frames waiting at tick %u)",
                        static_cast<double>(loop_.budget().mean_step_ns()) / 1e6,
                        static_cast<long long>(kTickNs / 1'000'000), r.behind, session_.executed_tick());
    if (r.over_budget) loop_wake = now;
    if (cfg_.drawing) {
      if (r.draw) draw_frame(now);
      // Uncapped drawing with nothing to draw on follows the session's wakes instead of spinning.
      if (renderer_ || cfg_.frame_period_ns > 0) loop_wake = std::min(loop_wake, r.next_wake_ns);
    }
  }
  if (now >= next_status_) status_line(now);
  return Wake{std::min({wake, loop_wake, next_status_})};
}

void ClientFront::leave(const std::string& why) {
  if (leaving_) return;
  leaving_ = true;
  session_.leave(why);
}

// The rejoin secret goes to --rejoin-file as soon as the welcome brings it.
void ClientFront::save_secret() {
  if (secret_saved_ || session_.rejoin_secret().empty()) return;
  secret_saved_ = true;
  if (cfg_.rejoin_file.empty()) return;
  std::ofstream out(cfg_.rejoin_file, std::ios::trunc);
  out << session_.rejoin_secret() << "\n";
  if (!out) LOCKSTEP_LOG_WARN("cannot write --rejoin-file %s", cfg_.rejoin_file.c_str());
}

// One drawn frame: the latest keys become the input sampled on every tick until the next frame.
void ClientFront::draw_frame(std::int64_t now) {
  if (figures_.frames > 0 && cfg_.frame_period_ns > 0)
    figures_.jitter.add_us(std::llabs(now - last_frame_ - cfg_.frame_period_ns) / 1000);
  last_frame_ = now;
  ++figures_.frames;
  if (!renderer_) return;
  const render::Keys keys = renderer_->poll_keys(now);
  keyboard_ = blank_tick(*cfg_.module);
  Controls controls = keys.controls;
  controls.world_width = session_.simulation()->width();
  controls.world_height = session_.simulation()->height();
  cfg_.module->from_controls(controls, memory_, &keyboard_);
  keyboard_.input.resize(cfg_.module->input_size, 0);
  for (std::size_t i = 0; i < keyboard_.commands.size(); ++i)
    if (!pending_.add(keyboard_.commands.at(i))) ++figures_.commands_dropped;  // over what a player may queue
  if (keys.quit) leave("the player quit");
  const double alpha = view_alpha(now, session_.tick_due_ns(session_.executed_tick()));
  session_.simulation()->draw(*session_.previous(), static_cast<float>(alpha), shapes_);
  const render::Hud hud{session_.executed_tick(), shown_fps_,          alpha,
                        session_.stats().rtt_ms,  session_.frames_buffered(), session_.last_hash(),
                        session_.desynced(),      session_.slot(),
                        cfg_.module->controls_help};
  renderer_->draw(shapes_, session_.simulation()->width(), session_.simulation()->height(), hud);
}

void ClientFront::take_input(PlayerTick* out) {
  if (keyboard_.input.size() == out->input.size()) out->input = keyboard_.input;
  std::size_t taken = 0;
  for (; taken < pending_.size() && out->commands.add(pending_.at(taken)); ++taken) {
  }
  if (taken == 0) return;
  Commands rest;
  for (std::size_t i = taken; i < pending_.size(); ++i) rest.add(pending_.at(i));
  pending_ = std::move(rest);
}

void ClientFront::status_line(std::int64_t now) {
  (void)now;
  shown_fps_ = static_cast<double>(figures_.frames - frames_at_status_);
  frames_at_status_ = figures_.frames;
  if (session_.phase() == ClientSession::Phase::Running && cfg_.status_lines)
    LOCKSTEP_LOG_INFO("tick %u fps %.0f buffered %zu rtt %u ms hash %s%s", session_.executed_tick(), shown_fps_,
                      session_.frames_buffered(), session_.stats().rtt_ms, hash_hex(session_.last_hash()).c_str(),
                      session_.desynced() ? " DESYNCED" : "");
  next_status_ += 1'000'000'000;
}

}  // namespace lockstep
