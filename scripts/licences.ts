/**
 * Licence report of what the image ships: every package of the production dependency tree
 * (package-lock.json entries that are not dev-only and are installed here), less what
 * scripts/slim-runtime-deps.sh removes from the image, plus the Node.js runtime itself. The
 * Debian packages of the base image are not covered (scan the image for those).
 *
 *   npm run licences -- <file.md>   write the report (CI writes it outside the tree); exit 1
 *                                   when a package's licence is not on the allowed list
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, here.includes(`${sep}.build${sep}`) ? '../..' : '..');

/** Licences the image may ship without review (SPDX ids; `A or B` passes when one is allowed). */
export const ALLOWED = new Set([
  'MIT',
  'ISC',
  'Apache-2.0',
  'BSD-2-Clause',
  'BSD-3-Clause',
  '0BSD',
  'BlueOak-1.0.0',
  'CC0-1.0',
  'Python-2.0',
  'Unlicense',
]);

/** Removed from the image by scripts/slim-runtime-deps.sh (the test keeps the two in step). */
export const NOT_SHIPPED = ['typescript'];

export interface ShippedPackage {
  name: string;
  version: string;
  license: string;
}

function licenceOf(entry: { license?: unknown }, dir: string): string {
  if (typeof entry.license === 'string') return entry.license;
  try {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { license?: unknown };
    if (typeof pkg.license === 'string') return pkg.license;
  } catch {
    // fall through
  }
  return 'UNKNOWN';
}

export function shippedPackages(root = ROOT): ShippedPackage[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; dev?: boolean; license?: unknown; name?: string }>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && existsSync(join(root, path)))
    .map(([path, entry]) => ({
      name: entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length),
      version: entry.version ?? 'unknown',
      license: licenceOf(entry, join(root, path)),
    }))
    .filter((pkg) => !NOT_SHIPPED.includes(pkg.name))
    .sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

export function allowed(license: string): boolean {
  return license
    .replace(/[()]/g, '')
    .split(/\s+or\s+/i)
    .some((id) => ALLOWED.has(id.trim()));
}

export function licenceReport(packages: ShippedPackage[], nodeVersion = process.version): string {
  const byLicence = new Map<string, number>();
  for (const pkg of packages) byLicence.set(pkg.license, (byLicence.get(pkg.license) ?? 0) + 1);
  return [
    '# Licences of what the image ships',
    '',
    `Node.js ${nodeVersion} (MIT, with the bundled libraries listed in its LICENSE file) and ${packages.length} npm packages.`,
    "The base image's Debian packages are not listed here.",
    '',
    '| licence | packages |',
    '|---|---|',
    ...[...byLicence].sort(([a], [b]) => a.localeCompare(b)).map(([licence, n]) => `| ${licence} | ${n} |`),
    '',
    '| package | version | licence |',
    '|---|---|---|',
    ...packages.map((pkg) => `| ${pkg.name} | ${pkg.version} | ${pkg.license} |`),
    '',
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const packages = shippedPackages();
  const report = licenceReport(packages);
  const out = process.argv[2];
  if (out) writeFileSync(out, report);
  else process.stdout.write(report);
  const refused = packages.filter((pkg) => !allowed(pkg.license));
  if (refused.length > 0) {
    process.stderr.write(
      `licences not on the allowed list:\n${refused.map((p) => `  ${p.name}@${p.version}: ${p.license}`).join('\n')}\n`,
    );
    process.exit(1);
  }
}
