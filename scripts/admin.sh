#!/usr/bin/env bash
# The operator CLI with the quick start's settings (.data/dev.env, the embedded database), e.g.
#   bash scripts/admin.sh grant-credit you@example.com 1000000
# With DATABASE_URL set it works on that database instead. `bash scripts/admin.sh --help` lists commands.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
source scripts/toolchain.sh
[ -d node_modules ] || pnpm install --frozen-lockfile --reporter=silent
# Development secrets of the quick start, for whatever the environment does not set itself.
if [ -f .data/dev.env ]; then
  while IFS='=' read -r name value; do
    if [ -n "$name" ] && [ -z "${!name:-}" ]; then export "$name=$value"; fi
  done <.data/dev.env
fi
export DATA_DIR="${DATA_DIR:-$ROOT/.data/control-plane}"
export CATALOG_FILE="${CATALOG_FILE:-$ROOT/deploy/catalog.example.yaml}"
cd services/control-plane
exec node bin/tollgate-admin.ts "$@"
