# Sourced by the tests that need Docker (docker/test.sh, tests/package/deb.sh): makes a Docker
# engine and the debian:bookworm-slim base image available, installing docker.io and starting
# dockerd, or building the base with debootstrap, when needed. The caller defines say, fail and
# NAME, and stops the daemon this started (DOCKERD_PID) when it exits. Tests that source it hold
# ctest's "docker" resource lock, so two never start a daemon at once.
DOCKERD_PID=""
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

