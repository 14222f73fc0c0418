#!/usr/bin/env bash
# CI's container step (called by .ci/run after the other steps): installs docker.io and
# debootstrap when missing, starts dockerd when none answers, runs scripts/compose-e2e.sh (images
# built here, docker-compose up, official clients through nginx, ledger check, down), then the
# official-client e2e files with the services under test from those images through testcontainers
# (TOLLGATE_E2E_IMAGES=1), and stops the dockerd it started, by its PID. Says clearly when it is
# skipped and why; TOLLGATE_CI_DOCKER=0 skips it on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "docker step: SKIPPED: $*"; exit 0; }

[ "${TOLLGATE_CI_DOCKER:-1}" != 0 ] || skip "TOLLGATE_CI_DOCKER=0"
[ "$(id -u)" = 0 ] || skip "needs root (to install docker.io and run dockerd)"
command -v apt-get >/dev/null || skip "no apt-get to install docker.io and debootstrap"

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "docker step: installing ${missing[*]}"
  # RUNLEVEL=1: the packages must not start services themselves; this step starts and stops dockerd.
  if ! { apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    skip "could not install ${missing[*]}"
  fi
fi

dockerd_pid=""
stop_dockerd() {
  [ -n "$dockerd_pid" ] || return 0
  kill -TERM "$dockerd_pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 1; done
}
trap stop_dockerd EXIT
if ! docker info >/dev/null 2>&1; then
  echo "docker step: starting dockerd"
  # Not `--ip 127.0.0.1`: testcontainers reaches published ports on the bridge's gateway address.
  dockerd >/tmp/tollgate-ci-dockerd.log 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 /tmp/tollgate-ci-dockerd.log; skip "dockerd did not start (see above)"; }
fi

started=$(date +%s)
bash scripts/compose-e2e.sh

# Official-client e2e files with their stacks from the images (`fromImages`), on Postgres and
# Redis containers of a network of their own; the run must say it took the images path.
echo "== e2e with the services under test from the built images (testcontainers)"
source scripts/toolchain.sh
log="$(mktemp)"
status=0
# The three official-client files keep the step within a few minutes; the other `fromImages` files
# (tool-choice, errors-keys, errors-limits, reseller) take the same path when run by hand.
env -u TEST_DATABASE_URL -u TEST_REDIS_URL TOLLGATE_E2E_IMAGES=1 pnpm vitest run --project e2e \
  test-e2e/test/openai-chat.test.ts test-e2e/test/openai-responses.test.ts test-e2e/test/anthropic.test.ts \
  2>&1 | tee "$log" || status=$?
took_images=0
grep -q '^services under test: images' "$log" && took_images=1
rm -f "$log"
[ "$status" = 0 ] || { echo "docker step: the e2e run from the images failed" >&2; exit 1; }
[ "$took_images" = 1 ] || { echo "docker step: the e2e run did not take the images path (see above)" >&2; exit 1; }
echo "docker step: passed in $(($(date +%s) - started)) s"
