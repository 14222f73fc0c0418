# Postgres from Debian's packages on the local base, for machines without a registry. It honours
# the official image's POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, so compose and
# testcontainers use it the same way. Elsewhere use the official postgres image.
ARG DEBIAN_IMAGE=tollgate/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 postgresql-client-15 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY deploy/docker/postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
USER postgres
STOPSIGNAL SIGINT
HEALTHCHECK --interval=5s --timeout=3s CMD pg_isready -h 127.0.0.1 -q || exit 1
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
