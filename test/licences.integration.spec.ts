/**
 * The supply-chain records CI produces (.ci/run, docs/releasing.md): the licence report of
 * what the image ships (scripts/licences.ts) and the CycloneDX SBOM of the runtime
 * dependencies (scripts/sbom.sh); both must describe the same production tree.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { NOT_SHIPPED, ROOT, allowed, licenceReport, shippedPackages } from '../scripts/licences.js';

const run = promisify(execFile);

describe('licences and SBOM', () => {
  const packages = shippedPackages();

  it('ships only production dependencies, each under an allowed licence', () => {
    const names = new Set(packages.map((p) => p.name));
    expect(names).toContain('ioredis');
    expect(names).toContain('@nestjs/core');
    for (const dev of ['jest', 'eslint', 'typescript', '@nestjs/cli']) expect(names).not.toContain(dev);
    expect(packages.filter((p) => !allowed(p.license))).toEqual([]);
    const report = licenceReport(packages, 'v24.0.0');
    expect(report).toContain('Node.js v24.0.0');
    expect(report).toContain('| ioredis |');
  });

  it('refuses a licence that is not on the list, and takes a dual licence when one side is', () => {
    expect(allowed('GPL-3.0-only')).toBe(false);
    expect(allowed('UNKNOWN')).toBe(false);
    expect(allowed('MIT or MPL-2.0')).toBe(true);
    expect(allowed('(MIT OR Apache-2.0)')).toBe(true);
  });

  it('keeps NOT_SHIPPED in step with scripts/slim-runtime-deps.sh', () => {
    const slim = readFileSync(`${ROOT}/scripts/slim-runtime-deps.sh`, 'utf8');
    for (const name of NOT_SHIPPED) expect(slim).toContain(`node_modules/${name}`);
  });

  it('matches the CycloneDX SBOM CI writes (scripts/sbom.sh: npm sbom of a production-only install)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vgw-sbom-'));
    let bom: {
      bomFormat: string;
      metadata: { component: { name: string } };
      components: Array<{ name: string; group?: string }>;
    };
    try {
      await run('sh', [join(ROOT, 'scripts', 'sbom.sh'), join(dir, 'sbom.cdx.json')], { maxBuffer: 64 << 20 });
      bom = JSON.parse(readFileSync(join(dir, 'sbom.cdx.json'), 'utf8')) as typeof bom;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(bom.bomFormat).toBe('CycloneDX');
    expect(bom.metadata.component.name).toBe('verification-gateway');
    const inBom = new Set(bom.components.map((c) => (c.group ? `${c.group}/${c.name}` : c.name)));
    const shipped = new Set(packages.map((p) => p.name));
    expect([...shipped].filter((name) => !inBom.has(name))).toEqual([]);
    // The image's tree exactly: slim-runtime-deps.sh has removed NOT_SHIPPED there too.
    expect([...inBom].filter((name) => !shipped.has(name))).toEqual([]);
  }, 180_000);
});
