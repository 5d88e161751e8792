/* lockstep_token.h: minting connect tokens, for a game's matchmaker or backend
 * (docs/PROTOCOL.md §4.6, docs/GUIDE.md §12). The backend and its servers share a 32-byte token
 * key (lockstep-server --token-key); the backend mints one token per player and match, naming
 * the match's server, and hands it to the player's game (lockstep_client_config.connect_token, or
 * lockstep-client --connect-token). Only that server admits it, only until it expires, and only
 * from the address that first used it; everything after the join is sealed with keys the token
 * carries. Link with -llockstep_net -llockstep_core (pkg-config --libs lockstep), or lockstep::net in CMake.
 * Results and errors as in lockstep.h. Thread-safe.
 */
#ifndef LOCKSTEP_LOCKSTEP_TOKEN_H
#define LOCKSTEP_LOCKSTEP_TOKEN_H

#include "lockstep/export.h"
#include <stddef.h>
#include <stdint.h>

#include "lockstep/lockstep.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKSTEP_TOKEN_KEY_BYTES 32
#define LOCKSTEP_TOKEN_MAX_BYTES 1024        /* a token file is at most this long */
#define LOCKSTEP_TOKEN_ANY_SLOT 0xffffffffu
#define LOCKSTEP_DEFAULT_PROTOCOL_ID 0x4c4f434b53544550ull /* "LOCKSTEP" */

/* A new token key from the system's secure random source. */
LOCKSTEP_API void lockstep_token_keygen(uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES]);

typedef struct lockstep_token_request {
  uint32_t struct_size;          /* sizeof(lockstep_token_request): lockstep_token_request_defaults sets it */
  uint64_t protocol_id;          /* the game's; LOCKSTEP_DEFAULT_PROTOCOL_ID unless the servers set another */
  uint64_t client_id;            /* the backend's id of the player: its seat is bound to it */
  uint32_t slot;                 /* the player slot it takes, or LOCKSTEP_TOKEN_ANY_SLOT */
  const char* const* servers;    /* 1..8 "a.b.c.d:port"; lockstep's client joins the first */
  size_t server_count;
  const uint8_t* user_data;      /* 0..256 bytes only the server reads, or NULL */
  size_t user_data_len;
  uint32_t lifetime_seconds;     /* 1..86400; the player must join within it (30 is usual) */
} lockstep_token_request;

/* The defaults into *request: lockstep's protocol id, any slot, 30 seconds; no servers. */
LOCKSTEP_API void lockstep_token_request_init(lockstep_token_request* request, size_t struct_size);
#define lockstep_token_request_defaults(request) lockstep_token_request_init((request), sizeof *(request))

/* Mints a token into out (its file's bytes; *out_len set to their length). LOCKSTEP_ERROR_ARGUMENT
 * for a request out of range (the sentence says which); LOCKSTEP_ERROR_BUFFER when cap is too
 * small, with *out_len the length needed (at most LOCKSTEP_TOKEN_MAX_BYTES). */
LOCKSTEP_API lockstep_status lockstep_token_mint(const lockstep_token_request* request, const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES],
                                    uint8_t* out, size_t cap, size_t* out_len, char* error, size_t error_cap);

/* Checks a session's result (the JSON lockstep-server writes with --result, posts with
 * --result-webhook and puts in its summary) against the token key the match's tokens were minted
 * with: LOCKSTEP_OK when it is authentic, LOCKSTEP_ERROR_FORGED when its MAC does not match (a
 * changed byte, another key, or unsigned), LOCKSTEP_ERROR_FORMAT when it is not a result,
 * LOCKSTEP_ERROR_ARGUMENT for NULL. With is_result_key != 0, key is the server's --result-key
 * itself rather than the token key. Code built against this header calls it by its plain name
 * (a macro, unless LOCKSTEP_PLAIN_NAMES is defined); the plain symbol, for binaries built against
 * versions 2 and 3, answers LOCKSTEP_ERROR_STATE and LOCKSTEP_ERROR_ARGUMENT as they did. */
LOCKSTEP_API lockstep_status lockstep_result_verify_v4(const char* json, size_t len,
                                                       const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES], int is_result_key);
LOCKSTEP_API lockstep_status lockstep_result_verify(const char* json, size_t len, const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES],
                                                    int is_result_key);
#ifndef LOCKSTEP_PLAIN_NAMES
#define lockstep_result_verify lockstep_result_verify_v4
#endif

#ifdef __cplusplus
}
#endif

#endif
