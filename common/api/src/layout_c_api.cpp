// lockstep_layout (lockstep_session.h): the C structs' sizes and field offsets as this library was
// built, for bindings to hold their own layouts to.
#include <cstddef>
#include <cstring>

#include "lockstep/lockstep_session.h"
#include "lockstep/lockstep_token.h"
#include "handles.hpp"

using namespace lockstep;

namespace {

struct Field {
  const char* strukt;
  const char* field;  // nullptr: the struct itself
  std::size_t offset, size;
};

#define LS_STRUCT(S) {#S, nullptr, 0, sizeof(S)}
#define LS_FIELD(S, F) {#S, #F, offsetof(S, F), sizeof(S::F)}

const Field kLayout[] = {
    LS_STRUCT(lockstep_command), LS_FIELD(lockstep_command, slot), LS_FIELD(lockstep_command, size),
    LS_FIELD(lockstep_command, bytes),
    LS_STRUCT(lockstep_frame), LS_FIELD(lockstep_frame, tick), LS_FIELD(lockstep_frame, present),
    LS_FIELD(lockstep_frame, filled), LS_FIELD(lockstep_frame, players), LS_FIELD(lockstep_frame, input_size),
    LS_FIELD(lockstep_frame, inputs), LS_FIELD(lockstep_frame, command_count), LS_FIELD(lockstep_frame, commands),
    LS_STRUCT(lockstep_field), LS_FIELD(lockstep_field, name), LS_FIELD(lockstep_field, kind), LS_FIELD(lockstep_field, bits),
    LS_STRUCT(lockstep_game), LS_FIELD(lockstep_game, struct_size), LS_FIELD(lockstep_game, user), LS_FIELD(lockstep_game, name),
    LS_FIELD(lockstep_game, version), LS_FIELD(lockstep_game, build_id), LS_FIELD(lockstep_game, input_size),
    LS_FIELD(lockstep_game, reset), LS_FIELD(lockstep_game, step), LS_FIELD(lockstep_game, save), LS_FIELD(lockstep_game, load),
    LS_FIELD(lockstep_game, tick), LS_FIELD(lockstep_game, entity_count), LS_FIELD(lockstep_game, fields),
    LS_STRUCT(lockstep_client_config), LS_FIELD(lockstep_client_config, struct_size), LS_FIELD(lockstep_client_config, host),
    LS_FIELD(lockstep_client_config, port), LS_FIELD(lockstep_client_config, name), LS_FIELD(lockstep_client_config, token),
    LS_FIELD(lockstep_client_config, spectate), LS_FIELD(lockstep_client_config, rejoin_secret),
    LS_FIELD(lockstep_client_config, last_tick), LS_FIELD(lockstep_client_config, module), LS_FIELD(lockstep_client_config, game),
    LS_FIELD(lockstep_client_config, log), LS_FIELD(lockstep_client_config, log_user), LS_FIELD(lockstep_client_config, hash_log),
    LS_FIELD(lockstep_client_config, connect_timeout_ms), LS_FIELD(lockstep_client_config, playout_max_ms),
    LS_FIELD(lockstep_client_config, predict), LS_FIELD(lockstep_client_config, connect_token),
    LS_FIELD(lockstep_client_config, connect_token_len), LS_FIELD(lockstep_client_config, step_budget_us),
    LS_STRUCT(lockstep_event), LS_FIELD(lockstep_event, struct_size), LS_FIELD(lockstep_event, kind),
    LS_FIELD(lockstep_event, tick), LS_FIELD(lockstep_event, slot), LS_FIELD(lockstep_event, code),
    LS_FIELD(lockstep_event, name), LS_FIELD(lockstep_event, detail),
    LS_STRUCT(lockstep_event_v3), LS_FIELD(lockstep_event_v3, kind), LS_FIELD(lockstep_event_v3, tick),
    LS_FIELD(lockstep_event_v3, slot), LS_FIELD(lockstep_event_v3, code), LS_FIELD(lockstep_event_v3, name),
    LS_FIELD(lockstep_event_v3, detail),
    LS_STRUCT(lockstep_client_stats), LS_FIELD(lockstep_client_stats, struct_size), LS_FIELD(lockstep_client_stats, tick),
    LS_FIELD(lockstep_client_stats, slot), LS_FIELD(lockstep_client_stats, rtt_ms), LS_FIELD(lockstep_client_stats, jitter_ms),
    LS_FIELD(lockstep_client_stats, loss), LS_FIELD(lockstep_client_stats, lead_ms), LS_FIELD(lockstep_client_stats, playout_ms),
    LS_FIELD(lockstep_client_stats, frames_behind), LS_FIELD(lockstep_client_stats, inputs_filled),
    LS_FIELD(lockstep_client_stats, frames_drawn), LS_FIELD(lockstep_client_stats, frames_clamped),
    LS_FIELD(lockstep_client_stats, hash), LS_FIELD(lockstep_client_stats, input_to_screen_p50_ms),
    LS_FIELD(lockstep_client_stats, input_to_screen_p99_ms), LS_FIELD(lockstep_client_stats, predict),
    LS_FIELD(lockstep_client_stats, predicted_tick), LS_FIELD(lockstep_client_stats, predicted_ticks),
    LS_FIELD(lockstep_client_stats, rebuilds), LS_FIELD(lockstep_client_stats, verified_predictions),
    LS_FIELD(lockstep_client_stats, mispredictions), LS_FIELD(lockstep_client_stats, game_steps),
    LS_FIELD(lockstep_client_stats, game_saves), LS_FIELD(lockstep_client_stats, game_loads),
    LS_FIELD(lockstep_client_stats, game_reused), LS_FIELD(lockstep_client_stats, step_budget_ms),
    LS_FIELD(lockstep_client_stats, step_cost_us), LS_FIELD(lockstep_client_stats, frame_ms),
    LS_STRUCT(lockstep_token_request), LS_FIELD(lockstep_token_request, struct_size),
    LS_FIELD(lockstep_token_request, protocol_id), LS_FIELD(lockstep_token_request, client_id),
    LS_FIELD(lockstep_token_request, slot), LS_FIELD(lockstep_token_request, servers),
    LS_FIELD(lockstep_token_request, server_count), LS_FIELD(lockstep_token_request, user_data),
    LS_FIELD(lockstep_token_request, user_data_len), LS_FIELD(lockstep_token_request, lifetime_seconds),
};

#undef LS_STRUCT
#undef LS_FIELD

}  // namespace

extern "C" lockstep_status lockstep_layout(const char* struct_name, const char* field, size_t* offset, size_t* size) try {
  c_api::entered(__func__);
  if (!struct_name || !offset || !size) return LOCKSTEP_ERROR_ARGUMENT;
  for (const Field& f : kLayout) {
    if (std::strcmp(f.strukt, struct_name) != 0) continue;
    if ((field == nullptr) != (f.field == nullptr) || (field && std::strcmp(f.field, field) != 0)) continue;
    *offset = f.offset;
    *size = f.size;
    return LOCKSTEP_OK;
  }
  return LOCKSTEP_ERROR_NOT_FOUND;
} catch (...) {
  return c_api::caught(__func__, nullptr, 0);
}
