#!/usr/bin/env bash
# The container test: makes a Docker engine and the debian:bookworm-slim base image available
# (installing docker.io and starting dockerd, or building the base with debootstrap, when
# needed), then runs docker/compose.yaml itself with `up --build`, as docs/GUIDE.md §13 tells users,
# with Debian's docker-compose (and the compose plugin where present), on a root-owned and on a
# user-owned ./out, and checks that every container exited 0, three identical hash logs and a
# replay that verifies. It removes its containers and network and stops the daemon it started.
set -uo pipefail
cd "$(dirname "$0")/.."
TAG=lockstep:latest
NAME=lockstep-test-$$
DOCKERD_PID=""
say() { echo "docker-test: $*"; }
fail() { say "FAIL: $*"; exit 1; }
cleanup() {
  docker rm -f "$NAME-status" >/dev/null 2>&1
  [ -n "${COMPOSE:-}" ] && $COMPOSE -p "$NAME" -f docker/compose.yaml down --remove-orphans >/dev/null 2>&1
  rm -rf docker/out
  if [ -n "$DOCKERD_PID" ]; then say "stopping the dockerd it started (pid $DOCKERD_PID)"; kill "$DOCKERD_PID"; wait "$DOCKERD_PID" 2>/dev/null; fi
}
trap cleanup EXIT
source "$(dirname "$0")/engine.sh"

# 3. The compose file users are told to run, run as they run it: `up --build` with Debian's
#    docker-compose (and with the compose plugin too where the docker CLI has it), once with no
#    ./out (the daemon creates it, owned by root) and once with a ./out owned by a non-root user.
command -v docker-compose >/dev/null || install docker-compose
COMPOSERS=("docker-compose")
docker compose version >/dev/null 2>&1 && COMPOSERS+=("docker compose")
run_scenario() {  # $1: compose command, $2: how ./out starts (absent | user)
  local compose=$1 out=$2 log=/tmp/$NAME-compose.log
  COMPOSE=$compose
  rm -rf docker/out
  if [ "$out" = user ]; then mkdir -p docker/out && chown 1000:1000 docker/out && chmod 0755 docker/out; fi
  say "running: $compose -f docker/compose.yaml up --build   (./out: $out)"
  $compose -p "$NAME" -f docker/compose.yaml up --build >"$log" 2>&1 ||
    { tail -20 "$log"; fail "$compose up exited non-zero"; }
  for s in prepare-out server bot1 bot2; do
    local id code
    id=$($compose -p "$NAME" -f docker/compose.yaml ps -aq "$s")
    [ -n "$id" ] || fail "no $s container"
    code=$(docker inspect -f '{{.State.ExitCode}}' "$id")
    [ "$code" = 0 ] || { docker logs "$id" 2>&1 | tail -10; fail "$s exited $code ($compose, ./out $out)"; }
    if [ "$s" != prepare-out ]; then
      [ "$(docker inspect -f '{{.Config.User}}' "$id")" = lockstep ] || fail "$s does not run as the image's non-root user"
    fi
  done
  if [ "$out" = user ]; then
    [ "$(stat -c %u docker/out)" = 1000 ] || fail "the user's ./out changed owner"
  fi
  check_outputs
  $compose -p "$NAME" -f docker/compose.yaml down --remove-orphans >/dev/null 2>&1
}

# 4. Three identical hash logs and a replay that verifies, in ./out.
check_outputs() {
  [ "$(wc -l <docker/out/server.hashes)" = 1000 ] || fail "server hash log has $(wc -l <docker/out/server.hashes) lines"
  cmp docker/out/server.hashes docker/out/bot1.hashes && cmp docker/out/server.hashes docker/out/bot2.hashes ||
    fail "the hash logs differ"
  docker run --rm -v "$PWD/docker/out:/out" --entrypoint lockstep-replay "$TAG" verify /out/session.replay | grep -q '^OK 1000' ||
    fail "the recorded replay does not verify"
}

for compose in "${COMPOSERS[@]}"; do
  for out in absent user; do run_scenario "$compose" "$out"; done
done
docker run --rm --entrypoint id "$TAG" -u | grep -qv '^0$' || fail "the image runs as root"
docker run --rm "$TAG" --version | grep -q lockstep-server || fail "the entrypoint is not lockstep-server"
# The health check the image declares answers inside a running session.
docker rm -f "$NAME-status" >/dev/null 2>&1
docker run -d --name "$NAME-status" "$TAG" --players 1 >/dev/null || fail "status container"
sleep 1
docker exec "$NAME-status" lockstep-server --status 127.0.0.1:7777 |
  python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["phase"] != "lobby")' ||
  fail "the server's status query does not answer inside the container"
docker rm -f "$NAME-status" >/dev/null 2>&1
say "PASS: ${COMPOSERS[*]}: the compose file's 4 containers exited 0 with root-owned and user-owned ./out, identical hash logs, replay verified"
