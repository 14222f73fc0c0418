#!/usr/bin/env bash
# The compose deployment end to end: builds the images (scripts/docker-images.sh, no registry
# needed), `docker-compose up` (Postgres, Redis, migrations, control plane, three gateways behind
# nginx, mock upstream), funds an account and creates a key with the operator CLI inside the
# control-plane container, runs the official-client e2e file against nginx, checks that the
# control plane serves the dashboard built into its image at / and /status, checks the ledger,
# and takes everything down. Needs a running Docker engine. Ports: free ones on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh

PROJECT="${COMPOSE_PROJECT:-tollgate-e2e}"
free_port() { node -e 'const s=require("node:net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
export TOLLGATE_BIND=127.0.0.1
export TOLLGATE_GATEWAY_PORT="${TOLLGATE_GATEWAY_PORT:-$(free_port)}"
export TOLLGATE_CONTROL_PLANE_PORT="${TOLLGATE_CONTROL_PLANE_PORT:-$(free_port)}"
compose() { docker-compose -p "$PROJECT" -f deploy/docker-compose.yml --env-file deploy/images.local.env "$@"; }
admin() { compose exec -T control-plane node bin/tollgate-admin.ts "$@"; }

[ "${SKIP_IMAGES:-0}" = 1 ] || bash scripts/docker-images.sh

# Fresh secrets for this run only (the file is git-ignored).
created_env=0
if [ ! -f deploy/.env ]; then
  node -e 'const h=()=>require("node:crypto").randomBytes(32).toString("hex");console.log(`INTERNAL_TOKEN_SECRET=${h()}\nKEY_PEPPER=${h()}\nKEY_ENCRYPTION_KEY=${h()}`)' >deploy/.env
  created_env=1
fi
cleanup() {
  compose logs --no-color >/tmp/"$PROJECT"-compose.log 2>&1 || true
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  [ "$created_env" = 0 ] || rm -f deploy/.env
}
trap cleanup EXIT

echo "== docker-compose up ($PROJECT; nginx on 127.0.0.1:$TOLLGATE_GATEWAY_PORT)"
compose up -d
gateway_url="http://127.0.0.1:$TOLLGATE_GATEWAY_PORT"
for _ in $(seq 1 120); do
  ready=0
  for _try in 1 2 3; do curl -fsS "$gateway_url/readyz" >/dev/null 2>&1 && ready=$((ready + 1)); done
  [ "$ready" = 3 ] && break
  sleep 1
done
[ "$ready" = 3 ] || { echo "compose-e2e: the gateways behind nginx did not become ready" >&2; compose ps; exit 1; }
compose ps

echo "== the dashboard, served by the control plane from its image"
control_plane_url="http://127.0.0.1:$TOLLGATE_CONTROL_PLANE_PORT"
for page in / /status; do
  # The built app (its hashed bundle under /assets/), not the 503 "not built" page.
  html="$(curl -fsS "$control_plane_url$page")" || { echo "compose-e2e: $page on the control plane did not answer 200" >&2; exit 1; }
  echo "$html" | grep -q '<div id="root">' && echo "$html" | grep -Eq 'src="/assets/[^"]+\.js"' \
    || { echo "compose-e2e: $page on the control plane is not the built dashboard" >&2; exit 1; }
  asset="$(echo "$html" | grep -Eo '/assets/[^"]+\.js' | head -1)"
  curl -fsS -o /dev/null "$control_plane_url$asset" || { echo "compose-e2e: $asset is not served" >&2; exit 1; }
  echo "$page: dashboard HTML ($asset served)"
done

email="compose-e2e-$(date +%s)@example.com"
admin create-account "$email" >/dev/null
admin grant-credit "$email" 100000000 --note "compose e2e" >/dev/null
key="$(admin create-key "$email" --name compose-e2e --concurrency 64 --requests-per-minute 100000 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).secret))')"

echo "== official clients through nginx"
E2E_DEPLOYED_GATEWAY_URL="$gateway_url" E2E_DEPLOYED_API_KEY="$key" \
  pnpm vitest run --project e2e test/deployed.test.ts

echo "== nginx: a key in the query string is refused and logged nowhere; bodies over the limit get request_too_large"
for query in "api_key=$key" "x=$key"; do
  answer="$(curl -sS -H "Authorization: Bearer $key" -w ' %{http_code}' "$gateway_url/v1/models?$query")"
  case "$answer" in *'"invalid_api_key"'*' 401') ;; *) echo "compose-e2e: a key in the query string was not refused: $answer" >&2; exit 1 ;; esac
done
curl -sS -o /dev/null "$gateway_url/v1/models?limit=5" -H "Authorization: Bearer $key"
too_large="$(head -c 33554433 /dev/zero | tr '\0' x | curl -sS -w ' %{http_code}' -H "Authorization: Bearer $key" \
  -H 'content-type: application/json' --data-binary @- "$gateway_url/v1/chat/completions")"
case "$too_large" in *'"request_too_large"'*' 413') ;; *) echo "compose-e2e: a body over the limit got: ${too_large:0:200}" >&2; exit 1 ;; esac
logs="$(compose logs --no-color 2>&1)"
if grep -qF -- "${key#sk-}" <<<"$logs"; then echo "compose-e2e: the key appears in the deployment's logs" >&2; exit 1; fi
grep -q 'GET /v1/models HTTP/1.1" 401' <<<"$logs" || { echo "compose-e2e: nginx did not log the refused request" >&2; exit 1; }
if grep -q 'limit=5' <<<"$logs"; then echo "compose-e2e: nginx logged a query string" >&2; exit 1; fi
echo "nginx: key in URL refused (401, logged without its query), 32 MiB + 1 body refused (413 JSON), no log holds the key"

echo "== /metrics of gateway-1 (scraped on the compose network's metrics port)"
compose exec -T gateway-1 node -e '
  fetch("http://127.0.0.1:9464/metrics").then((r) => r.text()).then((text) => {
    const lines = text.split("\n").filter((line) => line.startsWith("tollgate_gateway_requests_total"));
    if (lines.length === 0) process.exit(1);
    console.log(lines.join("\n"));
  }, () => process.exit(1));'

echo "== verify-ledger"
ledger="$(admin verify-ledger)"
echo "$ledger"
echo "$ledger" | grep -Eq '"consistent": *true' || { echo "compose-e2e: the ledger is not consistent" >&2; exit 1; }
echo "compose-e2e: passed"
