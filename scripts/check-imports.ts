/**
 * The import graph of src/ has no cycle and no upward arrow (docs/architecture.md, "Layers").
 * Run: `node scripts/check-imports.ts` (also part of `npm run lint`). Prints every offending
 * import and exits 1; prints the layer of each folder and exits 0 otherwise.
 *
 * Specs are held to the no-cycle rule only. Every relative import counts: type-only ones too (a type names what a layer depends on) and
 * dynamic `import()` ones (tracing.ts loads tracing-sdk.ts that way).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/**
 * Bottom to top: a file may import from its own layer or any layer below it. The longest
 * matching path decides a file's layer.
 */
const LAYERS: ReadonlyArray<{ name: string; paths: readonly string[] }> = [
  { name: 'vocabulary', paths: ['src/crypto/', 'src/vocabulary/'] },
  { name: 'config', paths: ['src/config/', 'src/ledger/ledger-config.ts', 'src/reuse/reuse-config.ts'] },
  { name: 'problem', paths: ['src/problem/'] },
  { name: 'openapi', paths: ['src/openapi.ts'] },
  { name: 'observability', paths: ['src/observability/'] },
  { name: 'store', paths: ['src/store/'] },
  { name: 'upstream', paths: ['src/upstream/'] },
  { name: 'token', paths: ['src/token/'] },
  { name: 'caller-auth', paths: ['src/caller-auth/'] },
  { name: 'budget', paths: ['src/budget/', 'src/accounting/inquiry-prices.ts'] },
  { name: 'ledger', paths: ['src/ledger/'] },
  { name: 'reuse', paths: ['src/reuse/'] },
  { name: 'inquiry', paths: ['src/inquiry/'] },
  { name: 'accounting', paths: ['src/accounting/'] },
  { name: 'health', paths: ['src/health/'] },
  { name: 'console', paths: ['src/console/'] },
  { name: 'wiring', paths: ['src/http/', 'src/app.module.ts', 'src/bootstrap.ts', 'src/main.ts'] },
];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm;

function layerOf(file: string): number {
  let best = -1;
  let bestLength = 0;
  LAYERS.forEach((layer, index) => {
    for (const path of layer.paths) {
      if (file.startsWith(path) && path.length > bestLength) [best, bestLength] = [index, path.length];
    }
  });
  if (best < 0) throw new Error(`${file} is in no layer: add its folder to LAYERS in scripts/check-imports.ts`);
  return best;
}

/** Every source file of src/ (specs included) with the src/ files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join('src', file).split('\\').join('/'));
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const targets = [...text.matchAll(IMPORT)]
      .map((match) =>
        relative(root, join(root, dirname(file), match[1]))
          .split('\\')
          .join('/'),
      )
      .map((target) => target.replace(/\.js$/, '.ts'))
      .filter((target) => target.startsWith('src/'));
    graph.set(file, targets);
  }
  return graph;
}

function upwardImports(graph: Map<string, string[]>): string[] {
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    // A spec is no part of its layer's production code: it may boot the whole gateway.
    if (file.endsWith('.spec.ts')) continue;
    for (const target of targets) {
      const [from, to] = [layerOf(file), layerOf(target)];
      if (to > from) problems.push(`upward: ${file} (${LAYERS[from].name}) imports ${target} (${LAYERS[to].name})`);
    }
  }
  return problems;
}

/** Each cycle once, as the path that closes it (depth-first search, three colours). */
function cycles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open')
        found.push(`cycle: ${[...stack.slice(stack.indexOf(target)), target].join(' → ')}`);
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

const graph = importGraph();
const problems = [...upwardImports(graph), ...cycles(graph)];
if (problems.length > 0) {
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  process.stderr.write(`${problems.length} import problem(s); the layers are in docs/architecture.md, "Layers"\n`);
  process.exit(1);
}
const imports = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
process.stdout.write(
  `${graph.size} files, ${imports} imports: no cycle, no upward import (${LAYERS.map((l) => l.name).join(' < ')})\n`,
);
