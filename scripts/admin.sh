#!/usr/bin/env bash
# The operator CLI with the quick start's settings, e.g.
#   bash scripts/admin.sh grant-credit you@example.com 1000000
# It works on the database of the last scripts/up.sh (.data/up.env: embedded PGlite, or the
# DATABASE_URL up.sh ran with); a DATABASE_URL in the environment wins. It prints which database
# it uses on stderr. `bash scripts/admin.sh --help` lists commands.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
source scripts/toolchain.sh
[ -d node_modules ] || pnpm install --frozen-lockfile --reporter=silent
# Settings of the last scripts/up.sh and the quick start's development secrets, for whatever the
# environment does not set itself.
for file in .data/up.env .data/dev.env; do
  [ -f "$file" ] || continue
  while IFS='=' read -r name value; do
    if [ -n "$name" ] && [ -z "${!name+set}" ]; then export "$name=$value"; fi
  done <"$file"
done
export DATA_DIR="${DATA_DIR:-$ROOT/.data/control-plane}"
export CATALOG_FILE="${CATALOG_FILE:-$ROOT/deploy/catalog.example.yaml}"
cd services/control-plane
exec node bin/tollgate-admin.ts "$@"
