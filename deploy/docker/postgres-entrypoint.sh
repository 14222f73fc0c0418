#!/bin/sh
# First start: initialise PGDATA with the official image's variables, then run the server.
set -eu
if [ "${1:-}" = "postgres" ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  auth=scram-sha-256
  [ -n "${POSTGRES_PASSWORD:-}" ] || auth=trust
  initdb --username="$user" --pwfile="$pwfile" --auth-host="$auth" --auth-local=trust >/dev/null
  rm -f "$pwfile"
  printf "listen_addresses = '*'\nunix_socket_directories = '/var/run/postgresql'\n" >>"$PGDATA/postgresql.conf"
  printf 'host all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
  db="${POSTGRES_DB:-$user}"
  if [ "$db" != "postgres" ]; then
    postgres --single -j -D "$PGDATA" postgres >/dev/null <<SQL
CREATE DATABASE "$db" OWNER "$user";
SQL
  fi
fi
exec "$@"
