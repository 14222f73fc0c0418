#!/usr/bin/env bash
# Runs the whole test suite: unit, service (real Postgres + Redis) and e2e (real processes).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
[ -d node_modules ] || pnpm install --frozen-lockfile

# The browser tests drive Debian's Chromium (never a browser download) and the many-gateways test
# puts Debian's nginx in front of three gateways: installed here when missing and apt is ours.
missing=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} (Debian packages the tests need)"
    # RUNLEVEL=1: no package may start a system service (nginx on port 80).
    apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "the tests need Debian's ${missing[*]}: sudo apt-get install -y ${missing[*]}" >&2
  fi
fi
exec pnpm test "$@"
