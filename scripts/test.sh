#!/usr/bin/env bash
# Runs the whole test suite: unit, service (real Postgres + Redis) and e2e (real processes).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
[ -d node_modules ] || pnpm install --frozen-lockfile
exec pnpm test "$@"
