// The embedding API's client (client.hpp): a ClientSession driven from the game's loop, with the
// game's input held between ticks, a playout schedule for confirmed frames and the view's alpha.
#include "lockstep/client.hpp"

#include <algorithm>
#include <chrono>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"

namespace lockstep {

namespace {
constexpr std::size_t kLatenessWindow = 100;     // one second of frames
constexpr std::int64_t kPlayoutSlackNs = 2'000'000;
constexpr std::size_t kCatchUpFrames = 25;        // this far behind, frames are executed at once
constexpr std::size_t kMaxPendingCommands = 64;   // commands waiting for ticks to take them
}  // namespace

std::unique_ptr<Client> Client::create(ClientOptions options, Error* error) {
  if (options.input_size > kMaxInputBytes) {
    if (error) *error = {ErrorKind::Usage, "input_size must be at most " + std::to_string(kMaxInputBytes), "input_size"};
    return nullptr;
  }
  if (options.playout_min_ns < 0 || options.playout_max_ns < options.playout_min_ns) {
    if (error) *error = {ErrorKind::Usage, "playout_max_ns must be at least playout_min_ns, both at least 0", "playout_max_ns"};
    return nullptr;
  }
  // The game steps frames on its own schedule (playout): the session only receives them.
  options.session.execute_on_arrival = false;
  options.session.keep_previous = true;
  auto session = ClientSession::create(options.session, error);
  if (!session) return nullptr;
  return std::unique_ptr<Client>(new Client(std::move(options), std::move(session)));
}

Client::Client(ClientOptions options, std::unique_ptr<ClientSession> session)
    : options_(std::move(options)), session_(std::move(session)), input_(options_.input_size, 0) {
  playout_ns_ = options_.playout_min_ns;
  session_->set_input_source([this](Tick, PlayerTick* out) {
    // The input set last, on every tick; the commands issued since, as many as one tick takes.
    std::copy_n(input_.begin(), std::min(input_.size(), out->input.size()), out->input.begin());
    std::size_t taken = 0;
    while (taken < pending_.size() && out->commands.add(pending_[taken])) ++taken;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(taken));
  });
}

Client::~Client() { stop_service(); }

std::int64_t Client::update(std::int64_t now_ns) {
  std::lock_guard lock(mutex_);
  return update_locked(now_ns);
}

std::int64_t Client::update_locked(std::int64_t now_ns) {
  std::int64_t wake = session_->update(now_ns);
  note_arrivals(now_ns);
  for (SessionEvent& e : session_->take_events()) {
    if (e.kind == SessionEvent::Kind::Joined) secret_ = e.detail;
    if (events_.size() >= 1024) events_.erase(events_.begin());
    events_.push_back(std::move(e));
  }
  step_due(now_ns);
  if (session_->frames_buffered() > 0) {
    const Tick next = session_->executed_tick() + 1;
    wake = std::min(wake, std::max(now_ns, playout_time(next)));
  }
  return wake;
}

// Every frame that arrived since the last look: how late it came after falling due. The
// playout delay is the 95th percentile of the last second's lateness, plus a little.
void Client::note_arrivals(std::int64_t now_ns) {
  const Tick received = session_->executed_tick() + static_cast<Tick>(session_->frames_buffered());
  if (received <= received_ || session_->tick_due_ns(1) == 0) {
    received_ = std::max(received_, received);
    return;
  }
  for (Tick t = received_ + 1; t <= received; ++t) {
    const std::int64_t late = std::max<std::int64_t>(0, now_ns - session_->tick_due_ns(t));
    if (lateness_.size() < kLatenessWindow) lateness_.push_back(late);
    else lateness_[lateness_at_++ % kLatenessWindow] = late;
  }
  received_ = received;
  std::vector<std::int64_t> sorted = lateness_;
  const std::size_t k = sorted.size() * 95 / 100;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(std::min(k, sorted.size() - 1)), sorted.end());
  const std::int64_t p95 = sorted[std::min(k, sorted.size() - 1)];
  playout_ns_ = std::clamp(p95 + kPlayoutSlackNs, options_.playout_min_ns, options_.playout_max_ns);
}

std::int64_t Client::playout_time(Tick t) const { return session_->tick_due_ns(t) + playout_ns_; }

// Frames whose playout time has come (all of them when far behind), within the step budget.
void Client::step_due(std::int64_t now_ns) {
  if (!session_->simulation()) return;
  const std::int64_t started = monotonic_ns();
  while (session_->frames_buffered() > 0) {
    const Tick next = session_->executed_tick() + 1;
    if (session_->frames_buffered() < kCatchUpFrames && playout_time(next) > now_ns) break;
    if (!session_->execute_next(now_ns)) break;
    if (monotonic_ns() - started > options_.step_budget_ns) break;
  }
}

bool Client::set_input(std::span<const std::uint8_t> input) {
  std::lock_guard lock(mutex_);
  if (input.size() > options_.input_size) return false;
  std::fill(input_.begin(), input_.end(), 0);
  std::copy(input.begin(), input.end(), input_.begin());
  return true;
}

bool Client::add_command(std::span<const std::uint8_t> command) {
  std::lock_guard lock(mutex_);
  if (command.empty() || command.size() > kMaxCommandBytesPerTick || pending_.size() >= kMaxPendingCommands) return false;
  pending_.emplace_back(command.begin(), command.end());
  return true;
}

std::vector<SessionEvent> Client::take_events() {
  std::lock_guard lock(mutex_);
  std::vector<SessionEvent> out;
  out.swap(events_);
  return out;
}

double Client::alpha(std::int64_t now_ns, bool drawn) {
  std::lock_guard lock(mutex_);
  const std::int64_t due = session_->tick_due_ns(session_->executed_tick());
  if (due == 0 || !session_->simulation()) return 1.0;
  const double a = static_cast<double>(now_ns - playout_ns_ - due) / static_cast<double>(kTickNs);
  if (drawn && session_->phase() == ClientSession::Phase::Running && session_->executed_tick() > 0) {
    ++drawn_;
    if (a >= 1.0) ++clamped_;
  }
  return std::clamp(a, 0.0, 1.0);
}

const Simulation* Client::current() const {
  std::lock_guard lock(mutex_);
  return session_->simulation();
}

const Simulation* Client::previous() const {
  std::lock_guard lock(mutex_);
  return session_->previous();
}

ClientFigures Client::figures() const {
  std::lock_guard lock(mutex_);
  const ClientStats& s = session_->stats();
  ClientFigures f;
  f.rtt_ms = s.rtt_ms;
  f.jitter_ms = s.rtt_var_ms;
  f.loss = s.loss;
  f.lead_ns = s.lead_ns;
  f.playout_ns = playout_ns_;
  f.frames_behind = session_->frames_buffered();
  f.inputs_filled = s.inputs_filled;
  f.frames_drawn = drawn_;
  f.frames_clamped = clamped_;
  f.tick = session_->executed_tick();
  f.slot = session_->slot();
  return f;
}

bool Client::finished() const {
  std::lock_guard lock(mutex_);
  return session_->finished();
}

int Client::exit_code() const {
  std::lock_guard lock(mutex_);
  return session_->exit_code();
}

std::string Client::end_message() const {
  std::lock_guard lock(mutex_);
  return session_->end_message();
}

const std::string& Client::rejoin_secret() const { return secret_; }

void Client::leave(const std::string& reason) {
  std::lock_guard lock(mutex_);
  session_->leave(reason);
}

void Client::start_service() {
  std::lock_guard lock(mutex_);
  if (service_.joinable()) return;
  service_stop_ = false;
  service_ = std::thread([this] {
    for (;;) {
      std::int64_t wake;
      {
        std::lock_guard inner(mutex_);
        if (service_stop_ || session_->finished()) return;
        wake = update_locked(monotonic_ns());
      }
      // Never longer than a tick, so every tick's input is sampled on time.
      const std::int64_t sleep_ns = std::clamp<std::int64_t>(wake - monotonic_ns(), 0, kTickNs / 2);
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
    }
  });
}

void Client::stop_service() {
  {
    std::lock_guard lock(mutex_);
    if (!service_.joinable()) return;
    service_stop_ = true;
  }
  service_.join();
}

}  // namespace lockstep
