#!/usr/bin/env bash
# Builds every image here without an image registry: a Debian base from the apt mirror
# (debootstrap, imported into Docker), Node 24 on it, Postgres and Redis from Debian's packages,
# and the three service images on that Node. Needs root, a running Docker engine and debootstrap.
#   bash scripts/docker-images.sh            # build what is missing, rebuild the service images
#   TAG=1.2.3 bash scripts/docker-images.sh  # tag the service images tollgate/<service>:1.2.3
# With a registry, skip this: `docker build -f deploy/Dockerfile --build-arg SERVICE=...` uses the
# public node:24-bookworm-slim, and compose can use the official postgres and redis images.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="${IMAGE_PREFIX:-tollgate}"
TAG="${TAG:-local}"
DEBIAN_IMAGE="$PREFIX/debian:bookworm"
NODE_IMAGE="$PREFIX/node:24"
MIRROR="${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}"
NPM_REGISTRY="${NPM_REGISTRY:-$(npm config get registry 2>/dev/null || true)}"

step() { printf '\n== %s\n' "$*"; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

[ -n "$MIRROR" ] || { echo "docker-images: set DEBIAN_MIRROR (no apt mirror found in /etc/apt)" >&2; exit 1; }
[ -n "$NPM_REGISTRY" ] || { echo "docker-images: set NPM_REGISTRY (npm has no registry configured)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "docker-images: no Docker engine answers (start dockerd first)" >&2; exit 1; }

if ! have_image "$DEBIAN_IMAGE" || [ "${REBUILD_BASE:-0}" = 1 ]; then
  step "Debian base $DEBIAN_IMAGE from $MIRROR"
  command -v debootstrap >/dev/null || { echo "docker-images: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

# Build stages trust what this machine trusts beyond the system defaults (e.g. a TLS proxy's CA).
rm -f deploy/docker/extra-ca/*.crt
cp /usr/local/share/ca-certificates/*.crt deploy/docker/extra-ca/ 2>/dev/null || true

build() { # tag dockerfile [build args...]
  local tag="$1" file="$2"
  shift 2
  step "$tag"
  local log
  log="$(mktemp)"
  if ! docker build -q -f "$file" --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" --build-arg "NPM_REGISTRY=$NPM_REGISTRY" \
    "$@" -t "$tag" . >"$log" 2>&1; then
    # The legacy builder's deprecation banner is noise; the rest says what failed.
    grep -v -e DEPRECATED -e 'buildx component' -e 'docs.docker.com/go/buildx' "$log" >&2
    rm -f "$log"
    echo "docker-images: building $tag failed" >&2
    exit 1
  fi
  rm -f "$log"
}

have_image "$NODE_IMAGE" || build "$NODE_IMAGE" deploy/docker/node.Dockerfile
have_image "$PREFIX/postgres:local" || build "$PREFIX/postgres:local" deploy/docker/postgres.Dockerfile
have_image "$PREFIX/redis:local" || build "$PREFIX/redis:local" deploy/docker/redis.Dockerfile
have_image "$PREFIX/nginx:local" || build "$PREFIX/nginx:local" deploy/docker/nginx.Dockerfile
for service in gateway control-plane mock-upstream; do
  build "$PREFIX/$service:$TAG" deploy/Dockerfile --build-arg "BASE_IMAGE=$NODE_IMAGE" --build-arg "SERVICE=$service"
done

step "images"
docker image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep "^$PREFIX/" | sort
