// lockstep-client: joins a session. Parses options and wires the parts together.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "lockstep/bot.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/frame_loop.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"
#include "render.hpp"

using namespace lockstep;

int main(int argc, char** argv) {
  log_setup("lockstep-client");
  CLI::App app{"lockstep-client: joins a lockstep session, sends inputs, steps confirmed input frames and reports\n"
               "per-tick state hashes.\n"
               "Exit codes: 0 finished, 1 runtime failure, 2 bad usage, 3 desync detected, 4 connection failure."};
  app.set_version_flag("--version", std::string("lockstep-client ") + kVersion + " (protocol " +
                                        std::to_string(kProtocolVersion) + ")");
  ClientConfig cfg;
  std::string connect = "127.0.0.1:7777", hash_log_path, render = "none";
  std::uint64_t bot_seed = 0;
  double fps = 60;
  app.add_option("--connect", connect, "server to join, HOST:PORT")->capture_default_str();
  app.add_option("--name", cfg.name, "display name (1-32 printable ASCII characters)")->capture_default_str();
  auto* bot = app.add_option("--bot", bot_seed, "play with deterministic pseudo-random input from this seed")->check(lockstep::cli::unsigned_number());
  app.add_option("--ticks", cfg.last_tick, "leave cleanly after this tick (0: stay to the end)")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--hash-log", hash_log_path, "write '<tick> <hash>' per executed tick to this file");
  app.add_option("--inject-desync-at", cfg.inject_desync_at, "test hook: perturb one coordinate by one ULP after this tick")->check(lockstep::cli::unsigned_number());
  app.add_option("--token", cfg.token, "join secret");
  std::string summary_path;
  app.add_option("--summary", summary_path, "write the JSON summary to this file instead of stdout");
  app.add_flag("--spectate", cfg.spectate, "join without a player slot");
  std::string rejoin_file;
  app.add_option("--rejoin", cfg.rejoin_secret, "come back into a running session's slot with its rejoin secret");
  app.add_option("--rejoin-file", rejoin_file,
                 "keep the rejoin secret in this file: read it (if present) to rejoin, write it at the welcome");
  app.add_option("--render", render,
                 "how to draw: none (headless: frames run on arrival unless --fps is given), tty (terminal), sdl (window)")
      ->check(CLI::IsMember({"none", "tty", "sdl"}))->capture_default_str();
  auto* fps_opt = app.add_option("--fps", fps, "frame rate cap (0: uncapped)")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 1000.0))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!split_host_port(connect, &cfg.host, &cfg.port)) {
    LOCKSTEP_LOG_ERROR("--connect wants HOST:PORT, got '%s'", connect.c_str());
    return 2;
  }
  if (cfg.spectate && bot->count() > 0) {
    LOCKSTEP_LOG_ERROR("--spectate and --bot exclude each other");
    return 2;
  }
  // Frames are stepped as they arrive, under the frame loop's time budget, at any frame rate;
  // a renderer (or an explicit --fps) also draws at --fps, blending the previous and current state.
  const bool drawing = render != "none" || fps_opt->count() > 0;
  cfg.execute_on_arrival = false;
  cfg.keep_previous = render != "none";
  std::unique_ptr<render::Renderer> renderer;
  if (render == "tty") renderer = render::make_tty_renderer();
  if (render == "sdl") {
    if (!render::sdl_available()) {
      LOCKSTEP_LOG_ERROR("--render sdl: this build has no SDL2 (install libsdl2-dev and rebuild)");
      return 2;
    }
    renderer = render::make_sdl_renderer(fps == 0, 900, 900);
  }

  if (!rejoin_file.empty() && cfg.rejoin_secret.empty()) {
    std::ifstream in(rejoin_file);
    std::getline(in, cfg.rejoin_secret);
  }
  HashLogWriter hash_log;
  if (!hash_log_path.empty() && !hash_log.open(hash_log_path, !cfg.rejoin_secret.empty())) {
    LOCKSTEP_LOG_ERROR("cannot write --hash-log %s: %s", hash_log_path.c_str(), std::strerror(errno));
    return 2;
  }
  std::string error;
  auto session = ClientSession::create(cfg, &error);
  if (!session) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return 2;
  }
  if (hash_log.is_open()) session->set_hash_log(&hash_log);
  PlayerInput keyboard;
  if (bot->count() > 0) session->set_input_source([bot_seed](Tick t) { return bot_input(bot_seed, t); });
  else session->set_input_source([&keyboard](Tick) { return keyboard; });
  if (renderer && !renderer->begin(&error)) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return 1;
  }
  if (render == "tty") log_setup("lockstep-client", LogLevel::Error);  // the screen is the terminal's now

  install_stop_signals();
  const std::int64_t frame_period = fps > 0 ? static_cast<std::int64_t>(1e9 / fps) : 0;
  std::int64_t now0 = monotonic_ns();
  std::int64_t next_status = now0 + 1'000'000'000, last_frame = now0;
  std::uint64_t frames = 0, frames_at_status = 0;
  double shown_fps = 0;
  FrameLoopConfig loop_cfg;
  loop_cfg.frame_period_ns = frame_period;
  FrameLoop loop(loop_cfg);
  Histogram frame_jitter;  // |frame interval - period|, microseconds
  std::vector<DrawDisc> discs;
  bool leaving = false;
  bool secret_saved = false;
  // One drawn frame: the latest keys become the input sampled on every tick until the next frame.
  auto draw_frame = [&](std::int64_t now) {
    if (frames > 0 && frame_period > 0) frame_jitter.add_us(std::llabs(now - last_frame - frame_period) / 1000);
    last_frame = now;
    ++frames;
    if (!renderer) return;
    const render::Keys keys = renderer->poll_keys(now);
    keyboard = keys.input;
    if (keys.quit && !leaving) {
      leaving = true;
      session->leave("the player quit");
    }
    const double alpha = view_alpha(now, session->tick_due_ns(session->executed_tick()));
    session->simulation()->draw(*session->previous(), static_cast<float>(alpha), discs);
    render::Hud hud{session->executed_tick(), shown_fps, alpha, session->stats().rtt_ms,
                    session->frames_buffered(), session->last_hash(), session->desynced(), session->slot()};
    renderer->draw(discs, session->simulation()->width(), session->simulation()->height(), hud);
  };
  run_event_loop(
      session->fd(),
      [&](std::int64_t now) {
        if (g_stop_requested && !leaving) {
          leaving = true;
          session->leave("stopped by the user");
        }
        std::int64_t wake = session->update(now);
        if (!secret_saved && !session->rejoin_secret().empty()) {
          secret_saved = true;
          if (!rejoin_file.empty()) {
            std::ofstream out(rejoin_file, std::ios::trunc);
            out << session->rejoin_secret() << "\n";
          }
        }
        std::int64_t loop_wake = INT64_MAX;
        if (session->simulation()) {
          const FramePass r = loop.pass(now, session->frames_buffered(), [&] { return session->execute_next(now); },
                                        monotonic_ns);
          if (r.report)
            LOCKSTEP_LOG_WARN("cannot keep up: stepping takes %.1f ms per %lld ms tick (%zu frames waiting at tick %u)",
                              static_cast<double>(loop.budget().mean_step_ns()) / 1e6,
                              static_cast<long long>(kTickNs / 1'000'000), r.behind, session->executed_tick());
          if (r.over_budget) loop_wake = now;
          if (drawing) {
            if (r.draw) draw_frame(now);
            // Uncapped drawing with nothing to draw on follows the session's wakes instead of spinning.
            if (renderer || frame_period > 0) loop_wake = std::min(loop_wake, r.next_wake_ns);
          }
        }
        if (now >= next_status) {
          shown_fps = static_cast<double>(frames - frames_at_status);
          frames_at_status = frames;
          if (session->phase() == ClientSession::Phase::Running && render != "tty")
            LOCKSTEP_LOG_INFO("tick %u fps %.0f buffered %zu rtt %u ms hash %s%s", session->executed_tick(), shown_fps,
                              session->frames_buffered(), session->stats().rtt_ms, hash_hex(session->last_hash()).c_str(),
                              session->desynced() ? " DESYNCED" : "");
          next_status += 1'000'000'000;
        }
        return Wake{std::min({wake, loop_wake, next_status})};
      },
      [&] { return session->finished(); });
  if (renderer) renderer->end();
  log_setup("lockstep-client", LogLevel::Info);
  hash_log.close();
  const ClientStats& st = session->stats();
  if (st.lead_ns > 0) LOCKSTEP_LOG_INFO("input lead settled at %.1f ms", static_cast<double>(st.lead_ns) / 1e6);
  if (st.input_latency.count() > 0)
    LOCKSTEP_LOG_INFO("input latency (sampled -> executed): p50 %.0f us, p99 %.0f us, max %lld us over %llu ticks",
                      st.input_latency.percentile_us(50), st.input_latency.percentile_us(99),
                      static_cast<long long>(st.input_latency.max_us()),
                      static_cast<unsigned long long>(st.input_latency.count()));
  if (session->exit_code() == 0) LOCKSTEP_LOG_INFO("%s", session->end_message().c_str());
  else LOCKSTEP_LOG_ERROR("%s", session->end_message().c_str());
  if (!redirect_summary(summary_path)) return 1;
  std::printf("{\"tick\":%u,\"final_hash\":\"%s\",\"exit\":%d,\"joined_at\":%u,\"resyncs\":%u,\"inputs_filled\":%llu,\"rtt_ms\":%u,\"jitter_ms\":%u,\"loss\":%.4f,\"connect_attempts\":%u,\"ticks_per_second\":%.2f,"
              "\"latency_us\":{\"p50\":%.0f,\"p99\":%.0f,\"max\":%lld},\"lead_us\":%lld,"
              "\"frames\":%llu,\"frame_jitter_us\":{\"p50\":%.0f,\"p99\":%.0f,\"max\":%lld}}\n",
              session->executed_tick(), hash_hex(session->last_hash()).c_str(), session->exit_code(), session->joined_at(),
              st.resyncs, static_cast<unsigned long long>(st.inputs_filled), st.rtt_ms, st.rtt_var_ms, st.loss, st.connect_attempts,
              st.last_exec_ns > st.first_exec_ns ? static_cast<double>(st.executed_ticks - 1) * 1e9 / static_cast<double>(st.last_exec_ns - st.first_exec_ns) : 0.0,
              st.input_latency.percentile_us(50), st.input_latency.percentile_us(99),
              static_cast<long long>(st.input_latency.max_us()), static_cast<long long>(st.lead_ns / 1000),
              static_cast<unsigned long long>(frames), frame_jitter.percentile_us(50), frame_jitter.percentile_us(99),
              static_cast<long long>(frame_jitter.max_us()));
  return session->exit_code();
}
