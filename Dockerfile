# The records service as a container image (docs/operations.md, "Containers").
#
# BASE_IMAGE: any Debian or Ubuntu based image with npm (Node 18 or later); the Node that
# runs the service is the project's pinned `node` package (24), which `npm ci` installs and
# `npm start` puts first on the PATH. No registry reachable? Load the image from an archive
# (`docker load -i …`) or name a local one: `--build-arg BASE_IMAGE=registry.internal/node:24`.
ARG BASE_IMAGE=node:24-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
COPY . .
# npm ci runs `prepare`, the compiled build (dist/); --if-present: without a build script
# `npm start` runs the TypeScript sources. Development packages and tests are left out of the image.
RUN npm ci \
  && (test -d dist || npm run build --if-present) \
  && npm prune --omit=dev --ignore-scripts \
  && rm -rf data test bench .ci

FROM ${BASE_IMAGE} AS runtime
WORKDIR /app
# An unprivileged user by number, so the base image needs no user of its own.
COPY --from=build --chown=10001:10001 /app /app
USER 10001:10001
# No tenants until the operator names them (RECORDS_TENANTS): the default `demo` tenant's first API key
# would be printed on stdout, which a container runtime keeps with its logs.
ENV NODE_ENV=production HOME=/tmp HOST=0.0.0.0 PORT=3030 METRICS_HOST=0.0.0.0 RECORDS_TENANTS='{}' \
  npm_config_update_notifier=false npm_config_fund=false
EXPOSE 3030 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3030) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# npm start execs node (no shell between): SIGTERM from the runtime reaches the service, which drains and stops.
CMD ["npm", "start"]
