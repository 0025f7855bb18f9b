# longhaul as a container image (README "Deploy"). Stage 1 builds and packs the package as it is
# published; stage 2 installs only that tarball and its production dependencies, and runs the
# installed `longhaul` command as the unprivileged `node` user.
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

# Stage 2: the tarball and its production dependencies only.
FROM node:${NODE_VERSION}-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /pkg/ /tmp/pkg/
RUN cp /tmp/pkg/longhaul-*.tgz /app/ \
  && npm install --omit=dev --no-audit --no-fund ./longhaul-*.tgz \
  && rm -rf /tmp/pkg /root/.npm \
  && mkdir /app/.longhaul && chown node:node /app/.longhaul
USER node
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.LONGHAUL_PORT || process.env.PORT || 8787}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/node_modules/longhaul/bin/longhaul.mjs"]
CMD ["serve"]
