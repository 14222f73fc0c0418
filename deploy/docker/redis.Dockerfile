# Redis from Debian's package on the local base, for machines without a registry. Elsewhere use
# the official redis image.
ARG DEBIAN_IMAGE=tollgate/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
COPY deploy/docker/redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
WORKDIR /data
EXPOSE 6379
USER redis
HEALTHCHECK --interval=5s --timeout=3s CMD redis-cli ping | grep -q PONG || exit 1
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
