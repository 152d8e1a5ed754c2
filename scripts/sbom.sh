#!/bin/sh
# CycloneDX SBOM of the runtime dependencies, as the image ships them:
#   sh scripts/sbom.sh <out.cdx.json>
# `npm sbom --omit dev` run in the work tree drops production packages that a dev dependency
# also reaches (npm/cli#7909: @nestjs/core, ajv, … went missing, 66 of 145 packages listed),
# so the SBOM is taken from a production-only install, staged outside the tree exactly as the
# Dockerfile's build stage prunes it (npm ci --omit=dev, then scripts/slim-runtime-deps.sh).
set -eu
out=${1:?usage: sh scripts/sbom.sh <out.cdx.json>}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# npm names the SBOM's component after the folder.
stage="$scratch/verification-gateway"
mkdir "$stage"
cp "$root/package.json" "$root/package-lock.json" "$stage/"
(cd "$stage" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
sh "$root/scripts/slim-runtime-deps.sh" "$stage"
# Without devDependencies in package.json npm does not report the uninstalled ones as missing.
node -e 'const f = process.argv[1]; const p = JSON.parse(require("fs").readFileSync(f)); delete p.devDependencies; require("fs").writeFileSync(f, JSON.stringify(p, null, 2))' "$stage/package.json"
(cd "$stage" && npm sbom --sbom-format cyclonedx --omit dev --loglevel=error) > "$out"
