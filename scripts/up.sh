#!/usr/bin/env bash
# Quick start: installs what is missing, then runs mock upstream, control plane and gateway on
# embedded defaults (PGlite in .data/, in-process limiter), one process each. Ctrl-C stops all.
# Set DATABASE_URL and/or REDIS_URL to run the same stack on a real Postgres and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
source scripts/toolchain.sh
pnpm install --frozen-lockfile --reporter=silent

mkdir -p .data/logs
if [ ! -f .data/dev.env ]; then
  # Fresh secrets for this checkout only; production sets its own (docs/operations/configuration.md).
  node -e '
    const { randomBytes } = require("node:crypto");
    const hex = () => randomBytes(32).toString("hex");
    console.log(`INTERNAL_TOKEN_SECRET=${hex()}\nKEY_PEPPER=${hex()}\nKEY_ENCRYPTION_KEY=${hex()}`);
  ' >.data/dev.env
  chmod 600 .data/dev.env
fi
# The environment wins over the generated development secrets.
while IFS='=' read -r name value; do
  if [ -n "$name" ] && [ -z "${!name:-}" ]; then export "$name=$value"; fi
done <.data/dev.env

export GATEWAY_PORT="${GATEWAY_PORT:-8080}"
export CONTROL_PLANE_PORT="${CONTROL_PLANE_PORT:-8081}"
export CONTROL_PLANE_INTERNAL_PORT="${CONTROL_PLANE_INTERNAL_PORT:-8082}"
export MOCK_UPSTREAM_PORT="${MOCK_UPSTREAM_PORT:-8090}"
export CONTROL_PLANE_INTERNAL_URL="${CONTROL_PLANE_INTERNAL_URL:-http://127.0.0.1:$CONTROL_PLANE_INTERNAL_PORT}"
export DATA_DIR="${DATA_DIR:-$ROOT/.data/control-plane}"
export CATALOG_FILE="${CATALOG_FILE:-$ROOT/deploy/catalog.example.yaml}"
export MOCK_UPSTREAM_URL="${MOCK_UPSTREAM_URL:-http://127.0.0.1:$MOCK_UPSTREAM_PORT}"

# A second quick start (or anything else) on these ports would make ours fail to listen while the
# health checks reach the other one: say so now, before starting anything.
for setting in GATEWAY_PORT CONTROL_PLANE_PORT CONTROL_PLANE_INTERNAL_PORT MOCK_UPSTREAM_PORT; do
  if node -e '
    const socket = require("node:net").connect(Number(process.argv[1]), "127.0.0.1");
    socket.on("connect", () => process.exit(0));
    socket.on("error", () => process.exit(1));
  ' "${!setting}"; then
    echo "Port ${!setting} ($setting) is already in use (EADDRINUSE): is Tollgate already running?" >&2
    echo "Stop the other instance, or choose another port, e.g. $setting=$(( ${!setting} + 100 )) bash scripts/up.sh" >&2
    exit 1
  fi
done

# What scripts/admin.sh needs to work on the same database as this stack (it may hold a password).
(
  umask 077
  {
    echo "DATABASE_URL=${DATABASE_URL:-}"
    echo "REDIS_URL=${REDIS_URL:-}"
    echo "REDIS_KEY_PREFIX=${REDIS_KEY_PREFIX:-}"
    echo "DATA_DIR=$DATA_DIR"
    echo "CATALOG_FILE=$CATALOG_FILE"
  } >.data/up.env
)
database_mode="PGlite in $DATA_DIR (embedded)"
if [ -n "${DATABASE_URL:-}" ]; then database_mode="Postgres (DATABASE_URL)"; fi
limiter_mode="in-process"
if [ -n "${REDIS_URL:-}" ]; then limiter_mode="Redis (REDIS_URL)"; fi
# Dashboard: the control plane serves services/dashboard/dist at /; built when missing or older
# than its sources. Its "use a key" panel shows the gateway at GATEWAY_PUBLIC_URL.
if [ ! -f services/dashboard/dist/index.html ] ||
  [ -n "$(find services/dashboard/src services/dashboard/index.html -newer services/dashboard/dist/index.html | head -n 1)" ]; then
  echo "building the dashboard"
  pnpm --filter @tollgate/dashboard run build >.data/logs/dashboard-build.log 2>&1 ||
    { tail -n 20 .data/logs/dashboard-build.log >&2; exit 1; }
fi
export GATEWAY_PUBLIC_URL="${GATEWAY_PUBLIC_URL:-http://127.0.0.1:$GATEWAY_PORT}"

pids=()
stopped=0
stop_all() {
  [ "$stopped" = 1 ] && return
  stopped=1
  trap - INT TERM EXIT
  echo
  echo "stopping..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all INT TERM EXIT

start() { # name dir; sets started_pid
  (cd "$2" && exec node src/main.ts) >>".data/logs/$1.log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
}

wait_healthy() { # name url pid
  for _ in $(seq 1 120); do
    if ! kill -0 "$3" 2>/dev/null; then
      echo "$1 stopped while starting; the end of .data/logs/$1.log:" >&2
      tail -n 20 ".data/logs/$1.log" >&2
      if tail -n 20 ".data/logs/$1.log" | grep -q EADDRINUSE; then
        echo "A port of $1 is already in use (EADDRINUSE): is Tollgate already running?" >&2
      fi
      exit 1
    fi
    if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$2"; then
      return 0
    fi
    sleep 0.5
  done
  echo "$1 did not become healthy; see .data/logs/$1.log" >&2
  tail -n 20 ".data/logs/$1.log" >&2
  exit 1
}

start mock-upstream services/mock-upstream
mock_pid=$started_pid
start control-plane services/control-plane
control_plane_pid=$started_pid
wait_healthy mock-upstream "http://127.0.0.1:$MOCK_UPSTREAM_PORT/health" "$mock_pid"
wait_healthy control-plane "http://127.0.0.1:$CONTROL_PLANE_PORT/api/v1/health" "$control_plane_pid"
start gateway services/gateway
wait_healthy gateway "http://127.0.0.1:$GATEWAY_PORT/health" "$started_pid"

cat <<INFO

Tollgate is running (database: $database_mode; limiter: $limiter_mode).
  gateway        http://127.0.0.1:$GATEWAY_PORT        (OpenAI-style base URL: http://127.0.0.1:$GATEWAY_PORT/v1)
  dashboard      http://127.0.0.1:$CONTROL_PLANE_PORT/          (status page: /status)
  control plane  http://127.0.0.1:$CONTROL_PLANE_PORT/api/v1
  internal API   http://127.0.0.1:$CONTROL_PLANE_INTERNAL_PORT   (gateway only)
  mock upstream  http://127.0.0.1:$MOCK_UPSTREAM_PORT
Logs in .data/logs/. scripts/admin.sh uses this database (settings in .data/up.env). Ctrl-C stops everything.
INFO
wait
