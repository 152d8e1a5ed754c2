/**
 * scripts/check-imports.ts (run by `npm run lint`) on a small tree of its own: it names an
 * upward import, a file over 300 lines and a class over 6 constructor collaborators, and
 * passes the same tree once they are gone.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

const run = promisify(execFile);
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'check-imports.ts');

/** Exit code and both outputs of the checker over `root`. */
async function check(root: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, root]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

const classWith = (name: string, parameters: number): string =>
  `export class ${name} {\n  constructor(${Array.from({ length: parameters }, (_, i) => `p${i}: number`).join(', ')}) {}\n}\n`;

describe('scripts/check-imports.ts', () => {
  let root: string;
  const write = (file: string, text: string): void => {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  };

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'vgw-check-imports-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('fails naming an upward import, a file over 300 lines and a class over 6 collaborators; passes at the limits', async () => {
    write('src/store/store.ts', 'export const STORE = 1;\n');
    write('src/config/upward.ts', "import { STORE } from '../store/store.js';\nexport const UP = STORE;\n");
    write('src/config/long.ts', 'export const LINE = 1;\n'.repeat(301));
    write('src/store/wide.ts', classWith('Wide', 7));
    write('src/store/wide.spec.ts', classWith('WideInSpec', 9) + '// a spec may be long\n'.repeat(400));

    const failing = await check(root);
    expect(failing.code).toBe(1);
    expect(failing.output).toContain('upward: src/config/upward.ts (config) imports src/store/store.ts (store)');
    expect(failing.output).toContain('too long: src/config/long.ts has 301 lines (at most 300)');
    expect(failing.output).toContain('too wide: src/store/wide.ts class Wide takes 7 collaborators (at most 6)');
    expect(failing.output).not.toContain('wide.spec.ts');

    write('src/config/upward.ts', 'export const UP = 1;\n');
    write('src/config/long.ts', 'export const LINE = 1;\n'.repeat(300));
    write('src/store/wide.ts', classWith('Wide', 6));
    const passing = await check(root);
    expect(passing.output).not.toMatch(/upward:|too long:|too wide:/);
    expect(passing.code).toBe(0);
  });
});
