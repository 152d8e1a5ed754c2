#!/bin/sh
# Removes from a production node_modules (npm ci --omit=dev, or npm prune --omit=dev) what only
# build-time tooling needs. Run by the Dockerfile's build stage and by test/image.integration.spec.ts,
# which then starts the result and checks it serves.
#
# typescript (24 MB): a dependency of @nestjs/swagger for its CLI plugin (dist/plugin/*) only; the
# gateway builds its document with decorators and never loads the plugin, so the runtime never
# requires typescript.
set -eu
cd "${1:-.}"
rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver
