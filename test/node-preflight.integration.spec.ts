/**
 * The preflight every entry point runs first (scripts/check-node.cjs, issue 47): an unsupported
 * Node gets one clear line naming the version in .nvmrc and how to get it, not a crash inside a
 * dependency. Run by the machine's old Node where there is one (Debian's /usr/bin/node).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';

const ROOT = new URL('..', import.meta.url).pathname;
const SCRIPT = `${ROOT}scripts/check-node.cjs`;
const WANTED = readFileSync(`${ROOT}.nvmrc`, 'utf8').trim();
const { engines, scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
};
const preflight = createRequire(import.meta.url)(SCRIPT) as {
  refusal: (version: string, range: string, wanted: string) => string | null;
};

describe('Node.js preflight', () => {
  it('refuses an unsupported version with one line naming .nvmrc and the way to get it', () => {
    for (const version of ['v20.20.2', 'v22.12.0', 'v24.10.9', 'v26.0.0']) {
      const line = preflight.refusal(version, engines.node, WANTED);
      expect(line).toContain(`needs Node.js ${WANTED}`);
      expect(line).toContain(`not ${version}`);
      expect(line).toContain('nvm use');
      expect(line).toContain('README.md "Quick start"');
      expect(line).not.toContain('\n');
    }
  });

  it('lets a supported version through', () => {
    for (const version of [`v${WANTED}`, 'v24.11.0', 'v24.99.1']) {
      expect(preflight.refusal(version, engines.node, WANTED)).toBeNull();
    }
    expect(preflight.refusal(process.version, engines.node, WANTED)).toBeNull();
  });

  it('runs first in every entry point', () => {
    for (const name of ['sandbox', 'sandbox:jwt', 'simulator', 'test', 'start:prod', 'start:dev', 'bench']) {
      expect(scripts[name]).toMatch(/^node scripts\/check-node\.cjs (&&|\|\| exit 1;) /);
    }
  });

  const oldNode = '/usr/bin/node';
  it.each(existsSync(oldNode) ? [oldNode] : [])('exits 1 with the one line under %s', async (node) => {
    const { stdout: version } = await promisify(execFile)(node, ['--version']);
    const run = promisify(execFile)(node, [SCRIPT]);
    if (preflight.refusal(version.trim(), engines.node, WANTED) === null) {
      await expect(run).resolves.toMatchObject({ stderr: '' });
      return;
    }
    await expect(run).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^verification-gateway needs Node\.js [^\n]+\n$/),
    });
  });
});
