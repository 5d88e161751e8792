// The embedding API's client (client.hpp): a ClientSession driven from the game's loop, with the
// game's input held between ticks, a playout schedule for confirmed frames and the view's alpha.
#include "lockstep/client.hpp"

#include <algorithm>
#include <chrono>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/tick_ring.hpp"

namespace lockstep {

namespace {
constexpr std::size_t kLatenessWindow = 100;     // one second of frames
constexpr std::int64_t kPlayoutSlackNs = 2'000'000;     // the most slack on top of the lateness's 95th percentile
constexpr std::int64_t kPlayoutSlackMinNs = 500'000;   // the least
constexpr std::size_t kCatchUpFrames = 25;        // this far behind, frames are executed at once
constexpr std::size_t kMaxPendingCommands = 64;   // commands waiting for ticks to take them
constexpr std::size_t kRing = 512;                // ticks of own inputs, sample times and predicted hashes kept
constexpr Tick kSteadyTicks = 200;
constexpr std::size_t kStepCostSamples = 32;     // updates whose cost per step the depth follows
constexpr std::size_t kFrameSamples = 16;        // intervals between drawn frames the budget follows
constexpr std::int64_t kBudgetMinNs = 8'000'000;   // the adaptive step budget's least (and the one before any frame)
constexpr std::int64_t kBudgetMaxNs = 50'000'000;  // and its most
constexpr std::size_t kMaxAwaitingPresent = 4096;  // sample times waiting for the game's presented()

// A ring of the last `cap` samples, and their median.
std::int64_t add_and_median(std::vector<std::int64_t>& ring, std::size_t& at, std::size_t cap, std::int64_t sample) {
  if (ring.size() < cap) ring.push_back(sample);
  else ring[at++ % cap] = sample;
  std::vector<std::int64_t> sorted = ring;
  const auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  return *mid;
}
}  // namespace

/// This player's input of each sampled tick and when it was sampled, and the frame and hash the
/// predicted world stepped each tick with.
struct Client::Rings {
  struct Sample {
    std::vector<std::uint8_t> input;
    std::int64_t sampled_at = 0;
  };
  TickRing<Sample> own{kRing};
  TickRing<InputFrame> predicted_frames{kRing};
  TickRing<std::uint64_t> predicted_hashes{kRing};
};

/// The confirmed frames by tick: the latest is what prediction repeats for everyone else, and
/// each is checked against the frame that was predicted for its tick.
struct Client::ConfirmedFrames {
  TickRing<InputFrame> frames{kRing};
  Tick latest = 0;
};

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
  auto confirmed = std::make_shared<ConfirmedFrames>();
  options.session.on_confirmed = [confirmed](const InputFrame& f) {
    confirmed->frames.put(f.tick) = f;
    confirmed->latest = f.tick;
  };
  options.session.keep_previous = true;
  if (options.step_budget_ns < 0) {
    if (error) *error = {ErrorKind::Usage, "step_budget_ns must be 0 (adaptive) or positive", "step_budget_ns"};
    return nullptr;
  }
  if (options.predict > 200) {
    if (error) *error = {ErrorKind::Usage, "predict must be 0..200 ticks", "predict"};
    return nullptr;
  }
  auto session = ClientSession::create(options.session, error);
  if (!session) return nullptr;
  auto client = std::unique_ptr<Client>(new Client(std::move(options), std::move(session)));
  client->confirmed_source_ = confirmed;
  return client;
}

Client::Client(ClientOptions options, std::unique_ptr<ClientSession> session)
    : options_(std::move(options)), session_(std::move(session)), input_(options_.input_size, 0),
      rings_(std::make_unique<Rings>()) {
  playout_ns_ = options_.playout_min_ns;
  depth_ = options_.predict;
  session_->set_input_source([this](Tick t, PlayerTick* out) {
    Rings::Sample& own = rings_->own.put(t);
    own.sampled_at = now_;
    if (source_) {
      source_(t, out);
      own.input = out->input;
      return;
    }
    own.input = input_;
    // The input set last, on every tick; the commands issued since, as many as one tick takes.
    std::copy_n(input_.begin(), std::min(input_.size(), out->input.size()), out->input.begin());
    std::size_t taken = 0;
    while (taken < pending_.size() && out->commands.add(pending_[taken])) ++taken;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(taken));
  });
  // A confirmed tick that had been predicted: was the prediction right?
  session_->on_tick([this](Tick t, std::uint64_t hash) {
    const std::uint64_t* predicted = rings_->predicted_hashes.find(t);
    if (!predicted) return;
    ++counters_.verified_predictions;
    if (*predicted != hash) ++counters_.mispredictions;
    rings_->predicted_hashes.forget(t);
  });
}

Client::~Client() { stop_service(); }

std::int64_t Client::update(std::int64_t now_ns) {
  std::lock_guard lock(mutex_);
  return update_locked(now_ns);
}

std::int64_t Client::update_locked(std::int64_t now_ns) {
  now_ = now_ns;
  std::int64_t wake = session_->update(now_ns);
  note_arrivals(now_ns);
  for (SessionEvent& e : session_->take_events()) {
    if (e.kind == SessionEvent::Kind::Joined) secret_ = e.detail;
    if (events_.size() >= 1024) events_.erase(events_.begin());
    events_.push_back(std::move(e));
  }
  step_due(now_ns);
  predict(now_ns);
  if (session_->frames_buffered() > 0) {
    const Tick next = session_->executed_tick() + 1;
    wake = std::min(wake, std::max(now_ns, playout_time(next)));
  }
  return wake;
}

// Every frame that arrived since the last look: how late it came after falling due. The
// playout delay is the 95th percentile of the last second's lateness, plus a slack of its spread.
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
  const auto at = [&](std::size_t percent) {
    const std::size_t k = std::min(sorted.size() * percent / 100, sorted.size() - 1);
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
    return sorted[k];
  };
  const std::int64_t p95 = at(95), p50 = at(50);
  // The slack grows with the spread of the lateness (the path's jitter): little on a steady path,
  // where every nanosecond of it is input latency, up to kPlayoutSlackNs on a jittery one.
  const std::int64_t slack = std::clamp(p95 - p50, kPlayoutSlackMinNs, kPlayoutSlackNs);
  playout_ns_ = std::clamp(p95 + slack, options_.playout_min_ns, options_.playout_max_ns);
}

std::int64_t Client::playout_time(Tick t) const { return session_->tick_due_ns(t) + playout_ns_; }

// Frames whose playout time has come (all of them when far behind), within the step budget.
void Client::step_due(std::int64_t now_ns) {
  if (!session_->simulation()) return;
  const std::int64_t started = monotonic_ns(), budget = step_budget();
  std::uint32_t stepped = 0;
  while (session_->frames_buffered() > 0) {
    const Tick next = session_->executed_tick() + 1;
    if (session_->frames_buffered() < kCatchUpFrames && playout_time(next) > now_ns) break;
    if (!session_->execute_next(now_ns)) break;
    ++stepped;
    if (monotonic_ns() - started > budget) {
      // Over budget with frames left: stepping costs more than real time here. Said at most every 5 s.
      if (session_->frames_buffered() > kCatchUpFrames && now_ns - last_behind_report_ > 5'000'000'000) {
        last_behind_report_ = now_ns;
        LOCKSTEP_LOG_WARN("cannot keep up: %zu confirmed frames wait at tick %u (the step budget is %.1f ms a pass)",
                          session_->frames_buffered(), session_->executed_tick(), static_cast<double>(budget) / 1e6);
      }
      break;
    }
  }
  // Without prediction the confirmed steps are the cost the budget is measured by; with it, the
  // predicted world's (in a game that owns its state, confirmed steps mostly reuse its saves).
  if (stepped > 0 && options_.predict == 0) note_step_cost(monotonic_ns() - started, stepped);
}

// Set, or adaptive: a frame of the game's, or what re-simulating the predicted world's lead (and a
// quarter more) costs at the measured step cost, whichever is more, within 8..50 ms.
std::int64_t Client::step_budget() const {
  if (options_.step_budget_ns > 0) return options_.step_budget_ns;
  std::int64_t budget = frame_ns_ > 0 ? frame_ns_ : kBudgetMinNs;
  if (options_.predict > 0 && step_cost_ns_ > 0) {
    const Tick sampled = session_->last_sampled(), base = session_->executed_tick();
    const std::int64_t lead = sampled > base ? std::min<std::int64_t>(sampled - base, options_.predict) : 0;
    budget = std::max(budget, step_cost_ns_ * (lead + lead / 4 + 1));
  }
  return std::clamp(budget, kBudgetMinNs, kBudgetMaxNs);
}

void Client::note_step_cost(std::int64_t spent_ns, std::uint32_t steps) {
  step_cost_ns_ = add_and_median(step_costs_, step_costs_at_, kStepCostSamples, std::max<std::int64_t>(1, spent_ns / steps));
}

// The prediction depth the budget affords at the measured step cost, between 1 and `predict`.
void Client::fit_depth() {
  if (options_.predict == 0 || step_cost_ns_ <= 0) return;
  const std::int64_t budget = step_budget();
  const auto fits = static_cast<std::uint32_t>(std::clamp<std::int64_t>(budget / step_cost_ns_, 1, options_.predict));
  if (fits == depth_) return;
  // Said when it falls below three quarters of the most (at most every 5 s), and once when it is
  // back at the most: a depth that wavers by a tick near its limit says nothing.
  if (fits < depth_ && 4 * fits < 3 * options_.predict && now_ - last_depth_report_ > 5'000'000'000) {
    last_depth_report_ = now_;
    said_lowered_ = true;
    LOCKSTEP_LOG_WARN("prediction lowered to %u ticks: a step costs %.3f ms and the step budget is %.1f ms", fits,
                      static_cast<double>(step_cost_ns_) / 1e6, static_cast<double>(budget) / 1e6);
  } else if (fits == options_.predict && said_lowered_) {
    said_lowered_ = false;
    LOCKSTEP_LOG_INFO("prediction back at %u ticks: a step costs %.3f ms and the step budget is %.1f ms", fits,
                      static_cast<double>(step_cost_ns_) / 1e6, static_cast<double>(budget) / 1e6);
  }
  depth_ = fits;
}

void Client::set_input_source(InputSource source) {
  std::lock_guard lock(mutex_);
  source_ = std::move(source);
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

// The predicted world: stepped to the latest sampled tick (at most `depth_` ahead of the verified
// one) with this player's sampled inputs and everyone else's last confirmed input, no commands.
// It is rebuilt from the verified world only when a confirmed frame differs from the one it was
// predicted with (GGPO's rule: roll back on a misprediction), so a right prediction costs
// nothing more. Never hashed for the session: its hashes only measure how often it was right.
void Client::predict(std::int64_t now_ns) {
  (void)now_ns;
  const Simulation* verified = session_->simulation();
  if (depth_ == 0 || !verified || session_->slot() < 0 || !confirmed_source_) return;
  fit_depth();
  // Before the first confirmed frame (a round trip after the start) the others' inputs are
  // predicted as none, everyone present: the view moves from the first sampled tick, and the first
  // confirmed frame that differs rolls it back as any misprediction does.
  InputFrame none;
  const InputFrame* latest = confirmed_source_->frames.find(confirmed_source_->latest);
  if (confirmed_source_->latest == 0) {
    const std::uint32_t players = std::min<std::uint32_t>(session_->players(), 32);
    none.reset(0, players, options_.input_size);
    none.present = players >= 32 ? ~0u : (1u << players) - 1;
    latest = &none;
  }
  if (!latest) return;
  const InputFrame& confirmed = *latest;
  const Tick base = session_->executed_tick(), sampled = session_->last_sampled();
  // Never past the session's last tick: a view of ticks that will not be played would jump back.
  Tick target = std::min<Tick>(sampled, base + depth_);
  if (const Tick last = session_->last_tick(); last != 0) target = std::min(target, std::max(last, base));
  if (sampled > base + depth_ && !said_depth_) {
    said_depth_ = true;
    LOCKSTEP_LOG_INFO("prediction is %u ticks ahead of the verified tick, its limit: the view waits for confirmed "
                      "frames beyond it", depth_);
  }
  const std::int64_t started = monotonic_ns();
  // Confirmed since the last look: still as predicted?
  bool wrong = !predicted_ || predicted_base_ == UINT32_MAX || base < predicted_base_ || predicted_->tick() < base ||
               base - predicted_base_ >= kRing;
  for (Tick t = predicted_base_ + 1; !wrong && t <= base; ++t) {
    const InputFrame* predicted = rings_->predicted_frames.find(t);
    const InputFrame* arrived = confirmed_source_->frames.find(t);
    wrong = !predicted || !arrived || !(*predicted == *arrived);
  }
  predicted_base_ = base;
  if (wrong || predicted_->tick() > target) {
    if (!predicted_) {
      predicted_ = verified->clone();
      predicted_prev_ = session_->previous() ? session_->previous()->clone() : verified->clone();
    } else {
      predicted_->assign(*verified);
      predicted_prev_->assign(session_->previous() ? *session_->previous() : *verified);
    }
    ++counters_.rebuilds;
  }
  InputFrame f;
  const auto slot = static_cast<std::uint32_t>(session_->slot());
  std::uint32_t stepped = 0;
  while (predicted_->tick() < target) {
    ++stepped;
    const Tick t = predicted_->tick() + 1;
    f.reset(t, confirmed.players, confirmed.input_size);
    f.present = confirmed.present | (1u << slot);
    std::copy(confirmed.inputs.begin(), confirmed.inputs.end(), f.inputs.begin());
    if (const Rings::Sample* own = rings_->own.find(t); own && slot < f.players) {
      const auto& mine = own->input;
      auto into = f.input(slot);
      std::fill(into.begin(), into.end(), 0);
      std::copy_n(mine.begin(), std::min(mine.size(), into.size()), into.begin());
    }
    predicted_prev_->assign(*predicted_);
    predicted_->step(f);
    rings_->predicted_frames.put(t) = f;
    ++counters_.predicted_ticks;
    rings_->predicted_hashes.put(t) = predicted_->hash();
  }
  const std::int64_t spent = monotonic_ns() - started;
  counters_.predict_ns += spent;
  // Re-simulation has the step budget: the depth follows what a step costs (fit_depth).
  if (stepped > 0) note_step_cost(spent, stepped);
}

const Simulation* Client::predicted() const {
  std::lock_guard lock(mutex_);
  return predicted_.get();
}

const Simulation* Client::predicted_previous() const {
  std::lock_guard lock(mutex_);
  return predicted_prev_.get();
}

double Client::predicted_alpha(std::int64_t now_ns, bool drawn) {
  std::lock_guard lock(mutex_);
  if (!predicted_) return alpha(now_ns, drawn);
  const std::int64_t at = session_->sample_due_ns(predicted_->tick());
  const double a = at == 0 ? 1.0 : static_cast<double>(now_ns - at) / static_cast<double>(kTickNs);
  if (drawn) {
    ++drawn_;
    if (a >= 1.0) ++clamped_;
    note_drawn(predicted_->tick(), now_ns);
  }
  return std::clamp(a, 0.0, 1.0);
}

// Own input to screen: every own tick up to the one now shown, from its sampling to this frame;
// steady state only, from 2 s after the first sampled tick (as the server's figures count).
void Client::note_drawn(Tick shown, std::int64_t now_ns) {
  if (last_drawn_at_ > 0 && now_ns > last_drawn_at_)
    frame_ns_ = add_and_median(frame_intervals_, frame_intervals_at_, kFrameSamples, now_ns - last_drawn_at_);
  last_drawn_at_ = now_ns;
  const Tick first = session_->first_sampled();
  if (first == 0 || shown < first + kSteadyTicks) {
    shown_ = std::max(shown_, shown);
    return;
  }
  const Tick oldest = shown > kRing ? static_cast<Tick>(shown - kRing + 1) : Tick{1};
  for (Tick t = std::max<Tick>(shown_ + 1, oldest); t <= shown; ++t) {
    const Rings::Sample* own = rings_->own.find(t);
    if (!own || own->sampled_at == 0) continue;
    if (!presents_) {
      screen_latency_.add_us((now_ns + frame_ns_ - own->sampled_at) / 1000);  // presented a frame later
    } else if (awaiting_present_.size() < kMaxAwaitingPresent) {
      awaiting_present_.push_back(own->sampled_at);
    }
  }
  shown_ = std::max(shown_, shown);
}

void Client::presented(std::int64_t now_ns) {
  std::lock_guard lock(mutex_);
  presents_ = true;
  for (const std::int64_t sampled_at : awaiting_present_) screen_latency_.add_us((now_ns - sampled_at) / 1000);
  awaiting_present_.clear();
}

double Client::alpha(std::int64_t now_ns, bool drawn) {
  std::lock_guard lock(mutex_);
  const std::int64_t due = session_->tick_due_ns(session_->executed_tick());
  if (due == 0 || !session_->simulation()) return 1.0;
  const double a = static_cast<double>(now_ns - playout_ns_ - due) / static_cast<double>(kTickNs);
  if (drawn && session_->phase() == ClientSession::Phase::Running && session_->executed_tick() > 0) {
    ++drawn_;
    if (a >= 1.0) ++clamped_;
    note_drawn(session_->executed_tick(), now_ns);
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
  f.predict = depth_;
  f.predicted_ticks = counters_.predicted_ticks;
  f.rebuilds = counters_.rebuilds;
  f.verified_predictions = counters_.verified_predictions;
  f.mispredictions = counters_.mispredictions;
  f.predict_ns = counters_.predict_ns;
  f.step_budget_ns = step_budget();
  f.step_cost_ns = step_cost_ns_;
  f.frame_ns = frame_ns_;
  if (screen_latency_.count() > 0) {
    f.input_to_screen_p50_ms = screen_latency_.percentile_us(50) / 1e3;
    f.input_to_screen_p99_ms = screen_latency_.percentile_us(99) / 1e3;
  }
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

std::string Client::rejoin_secret() const {
  std::lock_guard lock(mutex_);  // a copy under the lock: the service thread may write it
  return secret_;
}

void Client::leave(const std::string& reason) {
  std::lock_guard lock(mutex_);
  session_->leave(reason);
}

bool Client::set_result(std::span<const std::uint8_t> result) {
  std::lock_guard lock(mutex_);
  return session_->set_result(result);
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
