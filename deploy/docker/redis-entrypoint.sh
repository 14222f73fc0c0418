#!/bin/sh
# Debian's redis-server without a config file refuses remote clients (protected mode) when no
# password is set; inside a container network the other containers are those clients.
set -eu
if [ "${1:-}" = "redis-server" ]; then
  shift
  config=""
  # A config file, when given, must stay the first argument.
  case "${1:-}" in "" | -*) ;; *) config="$1"; shift ;; esac
  exec redis-server $config --bind 0.0.0.0 --protected-mode no "$@"
fi
exec "$@"
