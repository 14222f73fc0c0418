# nginx from Debian's package on the local base, for machines without a registry. Elsewhere use
# the official nginx image: both write /etc/nginx/templates/*.template to /etc/nginx/conf.d at start
# (envsubst, NGINX_ENVSUBST_FILTER), where compose mounts tollgate.conf.template.
ARG DEBIAN_IMAGE=tollgate/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx-light gettext-base \
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default \
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
COPY deploy/docker/nginx-entrypoint.sh /usr/local/bin/nginx-entrypoint.sh
EXPOSE 80
STOPSIGNAL SIGQUIT
ENTRYPOINT ["/usr/local/bin/nginx-entrypoint.sh"]
CMD ["nginx", "-g", "daemon off;"]
