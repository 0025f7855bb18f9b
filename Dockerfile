# longhaul as a container image (README "Deploy"). Stage 1 builds and packs the package as it is
# published; stage 2 unpacks only that tarball, installs its production dependencies from the
# lock file, and runs its `longhaul` command as the unprivileged `node` user.
#
#   docker build -t longhaul .
#   docker run --rm -e LONGHAUL_DATABASE_URL=postgres://… longhaul migrate
#   docker run -p 8787:8787 -e LONGHAUL_DATABASE_URL=… -e LONGHAUL_SECRET_KEY=… longhaul serve --role api
#
# test/deploy.test.ts installs the tarball the way stage 2 does and runs compose.yaml's
# commands; no image is built by the tests.

# Both stages run one Node.js release line: 24, the active LTS. CI runs the tests on Node 20,
# the oldest line package.json's engines admits; `--build-arg NODE_VERSION=20` builds on it.
ARG NODE_VERSION=24

# Stage 1: dependencies from the lock file, then dist/ and the dashboard, then the tarball.
FROM node:${NODE_VERSION} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts are skipped here (`prepare` would build before the sources are copied); the build
# below needs no native module.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && npm pack --ignore-scripts --pack-destination /pkg

# Stage 2: the package from its tarball, and its production dependencies from the lock file
# (the versions CI tested, not whatever the registry holds today). /app is the package itself,
# so a config copied into /app imports "longhaul" by the package's own name. Install scripts are
# skipped (the package's own `prepare` would build); better-sqlite3's native module is then
# built or fetched by its own script alone.
FROM node:${NODE_VERSION}-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /pkg/ /tmp/pkg/
COPY --from=build /src/package-lock.json /tmp/pkg/
RUN tar -xzf /tmp/pkg/longhaul-*.tgz -C /app --strip-components=1 \
  && cp /tmp/pkg/package-lock.json /app/ \
  && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm rebuild better-sqlite3 \
  && rm -rf /tmp/pkg /root/.npm \
  && mkdir /app/.longhaul && chown node:node /app/.longhaul
USER node
EXPOSE 8787
# Liveness only: a database outage must not restart a healthy container (/readyz says whether
# the store answers; compose.yaml probes it for the api).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.LONGHAUL_PORT || process.env.PORT || 8787}/livez`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/bin/longhaul.mjs"]
CMD ["serve"]
