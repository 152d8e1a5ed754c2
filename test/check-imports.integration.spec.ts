/**
 * scripts/check-imports.ts (run by `npm run lint`) on two small trees of its own: one breaking
 * each rule in the ways a regular expression or a first-overload reading let through, one keeping
 * every rule right at its limits. Both are written once and checked once; the cases read the
 * findings. The lists of excused files here are the test's own (checkTree's second argument).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Allowance, EXCEPTIONS, PENDING_SPLIT, checkTree } from '../scripts/check-imports.js';

const run = promisify(execFile);
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'check-imports.ts');

const lines = (count: number): string => 'export const LINE = 1;\n'.repeat(count);
const classWith = (name: string, parameters: number): string =>
  `export class ${name} {\n  constructor(${Array.from({ length: parameters }, (_, i) => `p${i}: number`).join(', ')}) {}\n}\n`;
const SEVEN = 'a: number, b: number, c: number, d: number, e: number, f: number, g: number';

const LISTED: readonly Allowance[] = [
  { file: 'src/store/listed-long.ts', lines: 400, reason: 'test' },
  { file: 'src/store/listed-wide.ts', collaborators: 7, reason: 'test' },
  { file: 'src/store/gone.ts', lines: 400, reason: 'test' },
];

/** Files both trees hold: the targets of the imports, a spec exempt from the limits. */
const COMMON: Record<string, string> = {
  'src/http/listener.ts': 'export const GRACE = 1;\n',
  'src/store/store.ts': 'export const STORE = 1;\n',
  'src/store/wide.spec.ts': classWith('WideInSpec', 9) + '// a spec may be long\n'.repeat(400),
};

const BREAKING: Record<string, string> = {
  ...COMMON,
  'src/config/single.ts': "import { STORE } from '../store/store.js';\nexport const UP = STORE;\n",
  'src/problem/double.ts':
    '// prettier-ignore\nimport { GRACE } from "../http/listener.js";\nexport const G = GRACE;\n',
  'src/problem/template.ts': 'export const later = () => import(`../http/listener.js`);\n',
  'src/problem/reexport.ts': "export { GRACE } from '../http/listener.js';\n",
  'src/problem/typed.ts': "export type G = typeof import('../http/listener.js');\n",
  'src/problem/required.cjs': "module.exports = require('../http/listener.js');\n",
  'src/store/from-config.ts': "import { UP } from '../config/single.js';\nexport const BACK = UP;\n",
  'src/store/cycle-a.ts': "export * from './cycle-b.js';\n",
  'src/store/cycle-b.ts': 'export const loop = () => import(`./cycle-a.js`);\n',
  'src/config/long.ts': lines(301),
  'src/store/long.mts': lines(301),
  'src/console/assets/long.js': lines(301),
  'src/store/wide.ts': classWith('Wide', 7),
  'src/store/overloaded.ts': `export class Overloaded {\n  constructor(a: number);\n  constructor(${SEVEN});\n  constructor(...all: number[]) {\n    void all;\n  }\n}\n`,
  'src/store/listed-long.ts': lines(401),
  'src/store/listed-wide.ts': lines(400),
};

const KEEPING: Record<string, string> = {
  ...COMMON,
  'src/config/long.ts': lines(300),
  'src/store/long.mts': lines(300),
  'src/console/assets/long.js': lines(300),
  'src/store/wide.ts': classWith('Wide', 6),
  // The script's own list holds when it runs from the command line.
  ...Object.fromEntries([...EXCEPTIONS, ...PENDING_SPLIT].map(({ file }) => [file, 'export const LISTED = 1;\n'])),
};
const AT_CEILINGS: Record<string, string> = {
  'src/store/listed-long.ts': lines(400),
  'src/store/listed-wide.ts': classWith('ListedWide', 7),
  'src/store/gone.ts': lines(400),
};

const roots: string[] = [];
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'vgw-check-imports-'));
  roots.push(root);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  return root;
}

/** Exit code and both outputs of the checker run from the command line over `root`. */
async function runScript(root: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, root]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe('scripts/check-imports.ts', () => {
  let breaking: string;
  let keeping: string;
  let found: string;
  beforeAll(() => {
    [breaking, keeping] = [tree(BREAKING), tree(KEEPING)];
    found = checkTree(breaking, LISTED).problems.join('\n');
  });
  afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  it('names an upward import in any quote style, a re-export, an import() of a template literal, an import type or a require()', () => {
    expect(found).toContain('upward: src/config/single.ts (config) imports src/store/store.ts (store)');
    for (const file of ['double.ts', 'template.ts', 'reexport.ts', 'typed.ts', 'required.cjs'])
      expect(found).toContain(`upward: src/problem/${file} (problem) imports src/http/listener.ts (wiring)`);
  });

  it('names two folders that import each other (config ↔ ledger, as before issue 42), file to file without a cycle', () => {
    expect(found).toContain(
      'mutual: src/config/ and src/store/ import each other (src/config/single.ts imports src/store/store.ts; src/store/from-config.ts imports src/config/single.ts)',
    );
  });

  it('names a cycle closed by a re-export and an import() of a template literal', () => {
    expect(found).toContain('cycle: src/store/cycle-a.ts → src/store/cycle-b.ts → src/store/cycle-a.ts');
  });

  it('names a file over 300 lines whatever its extension (.ts, .mts, the console page .js)', () => {
    for (const file of ['src/config/long.ts', 'src/store/long.mts', 'src/console/assets/long.js'])
      expect(found).toContain(`too long: ${file} has 301 lines (at most 300)`);
  });

  it('names a class over 6 collaborators, counting every constructor overload, not only the first', () => {
    expect(found).toContain('too wide: src/store/wide.ts class Wide takes 7 collaborators (at most 6)');
    expect(found).toContain('too wide: src/store/overloaded.ts class Overloaded takes 7 collaborators');
    expect(found).not.toContain('wide.spec.ts');
  });

  it('names a listed file past its ceiling, past a limit it is not listed for, or gone', () => {
    expect(found).toContain('too long: src/store/listed-long.ts has 401 lines (at most 400, its listed ceiling');
    expect(found).toContain('too long: src/store/listed-wide.ts has 400 lines (at most 300)');
    expect(found).toContain('gone: src/store/gone.ts is listed but no longer exists; remove it from the list');
  });

  it('passes a tree at the limits and at the listed ceilings', () => {
    expect(checkTree(tree({ ...KEEPING, ...AT_CEILINGS }), LISTED).problems).toEqual([]);
  });

  it('exits 1 naming the problems from the command line, 0 once they are gone', async () => {
    const [failing, passing] = await Promise.all([runScript(breaking), runScript(keeping)]);
    expect(failing.output).toContain('upward: src/problem/double.ts');
    expect(failing.code).toBe(1);
    expect(passing.output).not.toMatch(/upward:|cycle:|too long:|too wide:|gone:/);
    expect(passing.code).toBe(0);
  });
});
