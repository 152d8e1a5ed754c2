# syntax=docker/dockerfile:1
# Verification gateway image: build stage compiles, runtime stage holds dist/ and production
# dependencies only (no TypeScript, tests, simulator or bench). Base images are pinned by tag;
# pass --build-arg NODE_IMAGE=… to use a mirrored or local base (air-gapped sites, CI).
ARG NODE_IMAGE=node:20.20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts/slim-runtime-deps.sh ./scripts/
COPY src ./src
RUN npx tsc -p tsconfig.build.json \
 && npm prune --omit=dev --ignore-scripts \
 && sh scripts/slim-runtime-deps.sh \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# A bounded old generation: V8 otherwise lets garbage pile up to several hundred MiB under load
# before a full GC (RSS 191–297 MiB at 32 connections); with this cap RSS stays near 165 MiB for
# the same CPU per inquiry (docs/operations.md, "Memory"; the bench reads this line).
ENV NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=8"
WORKDIR /app
# Only what runs: the compiled gateway and its production dependencies, owned by root and
# read-only to the process; nothing is written at run time (readOnlyRootFilesystem works).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# A numeric non-root user, so Kubernetes' runAsNonRoot can verify it without /etc/passwd.
USER 10001:10001
EXPOSE 3000
# Exec form: node is PID 1 and receives SIGTERM itself; main.ts enables Nest's shutdown hooks
# (readiness 503, drain in-flight inquiries, flush owed settlements, close Redis) and exits.
CMD ["node", "dist/main.js"]
