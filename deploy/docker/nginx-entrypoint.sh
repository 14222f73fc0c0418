#!/bin/sh
# As the official nginx image does at start: each /etc/nginx/templates/*.template is written to
# /etc/nginx/conf.d/ without its .template suffix, with the environment variables whose names match
# NGINX_ENVSUBST_FILTER (a regular expression) substituted; nginx's own $variables are left alone.
set -eu
filter="${NGINX_ENVSUBST_FILTER:-^GATEWAY_}"
names="$(env | cut -d= -f1 | grep -E "$filter" | sed 's/^/$/' | tr '\n' ' ')"
for template in /etc/nginx/templates/*.template; do
  [ -e "$template" ] || continue
  envsubst "$names" <"$template" >"/etc/nginx/conf.d/$(basename "$template" .template)"
done
exec "$@"
