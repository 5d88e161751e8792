#!/usr/bin/env bash
# The container test: makes a Docker engine and the debian:bookworm-slim base image available
# (installing docker.io and starting dockerd, or building the base with debootstrap, when
# needed), builds the image, runs the compose scenario (plain `docker run` where compose is not
# installed), and checks that every container exited 0 with three identical hash logs. It
# removes its containers and network and stops the daemon it started.
set -uo pipefail
cd "$(dirname "$0")/.."
TAG=lockstep:latest
NAME=lockstep-test-$$
DOCKERD_PID=""
say() { echo "docker-test: $*"; }
fail() { say "FAIL: $*"; exit 1; }
cleanup() {
  docker rm -f "$NAME-server" "$NAME-bot1" "$NAME-bot2" >/dev/null 2>&1
  docker network rm "$NAME" >/dev/null 2>&1
  [ -n "${COMPOSE:-}" ] && $COMPOSE -p "$NAME" -f docker/compose.yaml down --remove-orphans >/dev/null 2>&1
  rm -rf docker/out
  if [ -n "$DOCKERD_PID" ]; then say "stopping the dockerd it started (pid $DOCKERD_PID)"; kill "$DOCKERD_PID"; wait "$DOCKERD_PID" 2>/dev/null; fi
}
trap cleanup EXIT
install() {
  [ "$(id -u)" = 0 ] || fail "missing $*; install with: sudo apt-get install -y $*"
  say "installing Debian packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } ||
    fail "could not install $*"
}

# 1. A Docker engine.
command -v dockerd >/dev/null || install docker.io
if ! docker info >/dev/null 2>&1; then
  say "no Docker engine is running; starting dockerd"
  dockerd >/tmp/$NAME-dockerd.log 2>&1 &
  DOCKERD_PID=$!
  for i in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { tail -5 /tmp/$NAME-dockerd.log; fail "dockerd did not start"; }
fi

# 2. The base image: pulled when a registry answers, else built from Debian's archive.
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  if ! timeout 60 docker pull debian:bookworm-slim >/dev/null 2>&1; then
    say "debian:bookworm-slim cannot be pulled; building it with debootstrap"
    command -v debootstrap >/dev/null || install debootstrap
    root=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/tmp/$NAME-debootstrap.log 2>&1 ||
      { tail -5 /tmp/$NAME-debootstrap.log; rm -rf "$root"; fail "debootstrap failed"; }
    tar -C "$root" -c . | docker import - debian:bookworm-slim >/dev/null || fail "docker import failed"
    rm -rf "$root"
  fi
fi

# 3. The image.
say "building $TAG"
docker build -q -f docker/Dockerfile -t "$TAG" . >/tmp/$NAME-build.log 2>&1 || { tail -20 /tmp/$NAME-build.log; fail "docker build failed"; }
docker run --rm --entrypoint id "$TAG" -u | grep -qv '^0$' || fail "the image runs as root"
docker run --rm "$TAG" --version | grep -q lockstep-server || fail "the entrypoint is not lockstep-server"

# 4. The scenario: one server, two bot clients, 1000 ticks, logs in docker/out.
rm -rf docker/out && mkdir -p docker/out && chmod 777 docker/out
COMPOSE=""
if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
elif command -v docker-compose >/dev/null 2>&1; then COMPOSE="docker-compose"; fi
if [ -n "$COMPOSE" ]; then
  say "running the compose scenario with $COMPOSE"
  $COMPOSE -p "$NAME" -f docker/compose.yaml up --no-build --abort-on-container-exit --exit-code-from server >/tmp/$NAME-compose.log 2>&1 ||
    { tail -20 /tmp/$NAME-compose.log; fail "compose scenario failed"; }
  for s in server bot1 bot2; do
    code=$(docker inspect -f '{{.State.ExitCode}}' "$($COMPOSE -p "$NAME" -f docker/compose.yaml ps -aq $s)")
    [ "$code" = 0 ] || fail "$s exited $code"
  done
else
  say "compose is not installed; running the same containers with docker run"
  docker network create "$NAME" >/dev/null || fail "network"
  docker run -d --name "$NAME-server" --network "$NAME" --network-alias server -v "$PWD/docker/out:/out" "$TAG" \
    --port 7777 --players 2 --ticks 1000 --bodies 200 --hash-log /out/server.hashes --record /out/session.replay \
    --desync-dir /out >/dev/null || fail "server container"
  for b in 1 2; do
    docker run -d --name "$NAME-bot$b" --network "$NAME" -v "$PWD/docker/out:/out" --entrypoint lockstep-client "$TAG" \
      --connect server:7777 --name "bot$b" --bot "$b" --hash-log "/out/bot$b.hashes" >/dev/null || fail "bot$b container"
  done
  sleep 3
  docker exec "$NAME-server" lockstep-server --status 127.0.0.1:7777 | grep -q '"phase":"running"' ||
    fail "the server's status query does not answer inside the container"
  for c in server bot1 bot2; do
    code=$(docker wait "$NAME-$c")
    [ "$code" = 0 ] || { docker logs "$NAME-$c" 2>&1 | tail -10; fail "$c exited $code"; }
  done
fi

# 5. Three identical hash logs and a replay that verifies.
[ "$(wc -l <docker/out/server.hashes)" = 1000 ] || fail "server hash log has $(wc -l <docker/out/server.hashes) lines"
cmp docker/out/server.hashes docker/out/bot1.hashes && cmp docker/out/server.hashes docker/out/bot2.hashes ||
  fail "the hash logs differ"
docker run --rm -v "$PWD/docker/out:/out" --entrypoint lockstep-replay "$TAG" verify /out/session.replay | grep -q '^OK 1000' ||
  fail "the recorded replay does not verify"
say "PASS: image built, 3 containers exited 0, identical hash logs, replay verified"
