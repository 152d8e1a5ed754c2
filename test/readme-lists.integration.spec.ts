/**
 * The lists a newcomer reads first, held to the code they describe: the README's Scripts table
 * names every npm script, its Layout every entry of src/, its "secrets from files" sentence every
 * `<NAME>_FILE` the configuration reads; the README and CONTRIBUTING name every package .ci/run
 * installs for the tests. And eslint ignores built output wherever it lands (the client's dist/).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';

const ROOT = new URL('..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const README = read('README.md');

/** The text of the README's `## <title>` section, up to the next `## `. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  expect([title, start]).not.toEqual([title, -1]);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end === -1 ? undefined : end);
}

describe('README.md against the code', () => {
  it('names every npm script in the Scripts table', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    // The first column: `npm run a` / `b`, `c`: every code span, `npm run ` and `npm ` dropped.
    const named = new Set(
      section('Scripts')
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .flatMap((line) => [...line.split(' | ')[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]))
        .map((name) => name.replace(/^npm (run )?/, '')),
    );
    expect(Object.keys(scripts).filter((name) => !named.has(name))).toEqual([]);
  });

  it('names every folder and file of src/ in the Layout', () => {
    const layout = section('Layout');
    const entries = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')))
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
    expect(
      entries.filter((entry) => !new RegExp(`(^|[\\s,])${entry.replace('.', '\\.')}([\\s,]|$)`, 'm').test(layout)),
    ).toEqual([]);
  });

  it('names every secret that can come from a file (<NAME>_FILE) where it says so', () => {
    // The configuration's list (src/config/load-config.ts), read from its source: it is not exported.
    const list = /const FILE_VARIABLES = \[([^\]]*)\]/.exec(read('src/config/load-config.ts'));
    const names = [...list![1].matchAll(/'([A-Z0-9_]+)'/g)].map((m) => m[1]);
    expect(names.length).toBeGreaterThanOrEqual(8);
    const sentence = /secrets\s+can come from files[\s\S]*?\.(\s|$)/.exec(README)![0];
    expect(names.filter((name) => !sentence.includes(`\`${name}\``))).toEqual([]);
  });

  it('README and CONTRIBUTING name every package .ci/run installs for the tests', () => {
    const packages = [...read('.ci/run').matchAll(/missing\+=\(([\w-]+)\)/g)].map((m) => m[1]);
    expect(packages).toEqual(expect.arrayContaining(['redis-server', 'postgresql', 'chromium', 'buildah']));
    for (const doc of ['README.md', 'CONTRIBUTING.md']) {
      const text = read(doc);
      expect([doc, packages.filter((name) => !text.includes(name))]).toEqual([doc, []]);
    }
  });
});

describe('eslint.config.js', () => {
  it('ignores built output and installed packages anywhere, the typed client’s own included', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    for (const path of ['clients/typescript/dist/index.js', 'clients/typescript/dist/cjs/index.d.ts', 'dist/main.js']) {
      expect([path, await eslint.isPathIgnored(join(ROOT, path))]).toEqual([path, true]);
    }
    expect(await eslint.isPathIgnored(join(ROOT, 'clients/typescript/node_modules/openapi-fetch/dist/index.js'))).toBe(
      true,
    );
    // Its sources are still linted.
    expect(await eslint.isPathIgnored(join(ROOT, 'clients/typescript/src/index.ts'))).toBe(false);
  });
});
