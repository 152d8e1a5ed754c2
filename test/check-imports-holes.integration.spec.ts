/**
 * What scripts/check-imports.ts lets through that it says it refuses: each case is a tree of its
 * own that `npm run lint` passes (prettier, eslint and tsc accept every file written here).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from '@jest/globals';

const run = promisify(execFile);
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'check-imports.ts');
const SEVEN = 'a: number, b: number, c: number, d: number, e: number, f: number, g: number';

/** Exit code and both outputs of the checker over a tree holding `files`. */
async function check(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const root = mkdtempSync(join(tmpdir(), 'vgw-check-holes-'));
  roots.push(root);
  for (const [file, text] of Object.entries({ 'src/http/listener.ts': 'export const GRACE = 1;\n', ...files })) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, root]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}
const roots: string[] = [];
afterEach(() => roots.splice(0).forEach((root) => rmSync(root, { recursive: true, force: true })));

describe('scripts/check-imports.ts holes', () => {
  it('names an upward import written in double quotes (kept so by // prettier-ignore)', async () => {
    const result = await check({
      'src/problem/up.ts':
        '// prettier-ignore\nimport { GRACE } from "../http/listener.js";\nexport const G = GRACE;\n',
    });
    expect(result.output).toContain('upward: src/problem/up.ts');
    expect(result.code).toBe(1);
  });

  it('names an upward dynamic import written as a template literal', async () => {
    const result = await check({ 'src/problem/up.ts': 'export const later = () => import(`../http/listener.js`);\n' });
    expect(result.output).toContain('upward: src/problem/up.ts');
    expect(result.code).toBe(1);
  });

  it('names a class whose first constructor signature is an overload narrower than the implementation', async () => {
    const result = await check({
      'src/store/wide.ts': `export class Wide {\n  constructor(a: number);\n  constructor(${SEVEN});\n  constructor(...all: number[]) {\n    void all;\n  }\n}\n`,
    });
    expect(result.output).toContain('too wide: src/store/wide.ts class Wide');
    expect(result.code).toBe(1);
  });

  it('names a file of src/ over 300 lines that is not .ts (.mts, or the console page .js)', async () => {
    const result = await check({
      'src/store/long.mts': 'export const LINE = 1;\n'.repeat(301),
      'src/console/assets/long.js': 'export const LINE = 1;\n'.repeat(301),
    });
    expect(result.output).toContain('too long: src/store/long.mts');
    expect(result.output).toContain('too long: src/console/assets/long.js');
    expect(result.code).toBe(1);
  });

  it('names a PENDING_SPLIT file past a limit its entry does not give as the reason', async () => {
    // Listed because GatewayStatusReader takes 7 collaborators; nothing excuses 400 lines.
    const result = await check({ 'src/console/gateway-status.ts': 'export const LINE = 1;\n'.repeat(400) });
    expect(result.output).toContain('too long: src/console/gateway-status.ts');
    expect(result.code).toBe(1);
  });
});
