# nginx from Debian's package on the local base, for machines without a registry. Elsewhere use
# the official nginx image: both read /etc/nginx/conf.d/*.conf, where compose mounts tollgate.conf.
ARG DEBIAN_IMAGE=tollgate/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx-light \
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default \
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
