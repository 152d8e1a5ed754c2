# Verification gateway image: build stage compiles, runtime stage holds dist/ and production
# dependencies only (no TypeScript, tests, simulator or bench). Base images are pinned by tag;
# pass --build-arg NODE_IMAGE=… to use a mirrored or local base (air-gapped sites, CI). No
# `# syntax=` line: BuildKit would fetch a frontend image from a registry for it.
#
# Release builds pass what the image reports and is labelled with (docs/releasing.md):
#   --build-arg VERSION=$(node -p "require('./package.json').version")
#   --build-arg BUILD_COMMIT=$(git rev-parse HEAD)
#   --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# BUILD_COMMIT reaches vgw_build_info{commit}; VERSION must equal package.json's version (the
# build fails otherwise), which vgw_build_info{version} reports.
ARG NODE_IMAGE=node:24.21-bookworm-slim
ARG VERSION=
ARG BUILD_COMMIT=unknown
ARG BUILD_DATE=

FROM ${NODE_IMAGE} AS build
ARG VERSION
WORKDIR /app
COPY package.json package-lock.json ./
RUN node -e 'const v = require("./package.json").version; if (process.argv[1] && process.argv[1] !== v) { console.error(`VERSION=${process.argv[1]} but package.json has ${v}`); process.exit(1); }' "$VERSION"
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts/slim-runtime-deps.sh ./scripts/
COPY src ./src
# The console's page files (src/console/assets/: HTML, CSS, browser modules) are no TypeScript:
# copied beside the compiled module that serves them. Its chart library (uplot) is a runtime
# dependency, so the prune below keeps it. Copied by node: a minimal base has no coreutils.
RUN npx tsc -p tsconfig.build.json \
 && node -e 'require("node:fs").cpSync("src/console/assets", "dist/console/assets", { recursive: true })' \
 && npm prune --omit=dev --ignore-scripts \
 && sh scripts/slim-runtime-deps.sh \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ARG VERSION
ARG BUILD_COMMIT
ARG BUILD_DATE
LABEL org.opencontainers.image.title="verification-gateway" \
      org.opencontainers.image.description="Gateway in front of the upstream KYC verification service (Shahkar, IBAN inquiry)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${BUILD_COMMIT}" \
      org.opencontainers.image.created="${BUILD_DATE}" \
      org.opencontainers.image.source="https://git.example.com/platform/verification-gateway" \
      org.opencontainers.image.licenses="UNLICENSED"
ENV NODE_ENV=production
# The commit the image was built from: the `commit` label of vgw_build_info.
ENV BUILD_COMMIT=${BUILD_COMMIT}
# Re-measured on Node 24 (docs/performance.md; the bench reads this line): with Node's defaults
# V8 lets the old generation grow to ~200 MiB before a full GC (RSS 277–296 MiB at 32
# connections); these flags hold RSS at 176–194 MiB, flat over 500 000 inquiries, inside the
# chart's 192Mi memory request, for 20–30 % more CPU per inquiry. Tried and not kept: the old-space
# cap alone (GC thrash: ×9 CPU), semi-space 16 (−4 % CPU, +5–16 MiB), 96 MiB old / 4 MiB semi
# (RSS 166–170 MiB, +25–45 % CPU).
ENV NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=8"
WORKDIR /app
# Only what runs: the compiled gateway and its production dependencies, owned by root and
# read-only to the process; nothing is written under /app (readOnlyRootFilesystem works).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The one place the gateway writes: the embedded ledger's files (PGlite, used when
# LEDGER_DATABASE_URL is unset; docs/operations.md, "Ledger"), a volume owned by the runtime user.
# Without a volume mounted here (the chart mounts an emptyDir, or a PersistentVolumeClaim) the
# engine gives an anonymous one, lost with the container. Made by node: a minimal base has no
# coreutils.
ENV LEDGER_DATA_DIR=/var/lib/verification-gateway/ledger
# Its parents stay 0755 (a recursive mkdir gives every level the mode asked for: 0700 on a
# root-owned parent kept the user out, EACCES at start; test/image.integration.spec.ts).
RUN ["node", "-e", "const fs = require('node:fs'); const dir = process.env.LEDGER_DATA_DIR; fs.mkdirSync(require('node:path').dirname(dir), { recursive: true, mode: 0o755 }); fs.mkdirSync(dir, { mode: 0o700 }); fs.chownSync(dir, 10001, 10001)"]
VOLUME /var/lib/verification-gateway/ledger
# A numeric non-root user, so Kubernetes' runAsNonRoot can verify it without /etc/passwd.
USER 10001:10001
EXPOSE 3000
# Exec form: node is PID 1 and receives SIGTERM itself; main.ts enables Nest's shutdown hooks
# (readiness 503, drain in-flight inquiries, flush owed settlements, close Redis) and exits.
CMD ["node", "dist/main.js"]
