/**
 * The shape of src/ (docs/architecture.md, "Layers"): the import graph has no cycle and no
 * upward arrow, no file is longer than MAX_LINES and no class takes more than MAX_COLLABORATORS
 * constructor parameters. Run: `node scripts/check-imports.ts [root]` (also part of `npm run
 * lint`; root defaults to this repository). Prints every offender and exits 1; prints a summary
 * and exits 0 otherwise.
 *
 * Specs are held to the no-cycle rule only. Every relative import counts: type-only ones too (a type names what a layer depends on) and
 * dynamic `import()` ones (tracing.ts loads tracing-sdk.ts that way).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

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

/** A file a newcomer reads top-down in one sitting. */
const MAX_LINES = 300;
/** Constructor parameters of one class (ConfigService counts): more means it does too much. */
const MAX_COLLABORATORS = 6;

/** Files allowed past a limit for good, each with its reason. Upward imports have no such list. */
const EXCEPTIONS: Readonly<Record<string, string>> = {};

/**
 * Files being split on other branches right now; this list goes when they are merged. Nothing
 * else may be added to it.
 */
const PENDING_SPLIT: Readonly<Record<string, string>> = {
  'src/inquiry/inquiry.service.ts': 'the inquiry path as steps (issue 37)',
  'src/ledger/ledger.store.ts': "split with the console's list of inquiries (issue 35)",
  'src/ledger/admin.openapi.ts': "split with the console's admin routes (issue 35)",
  'src/console/gateway-status.ts': 'GatewayStatusReader takes 7 collaborators; the console work owns it (issue 35)',
};

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
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

/** Files over MAX_LINES and classes over MAX_COLLABORATORS, specs aside, by file. */
function sizeProblems(files: readonly string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of files) {
    if (file.endsWith('.spec.ts')) continue;
    const text = readFileSync(join(root, file), 'utf8');
    const problems: string[] = [];
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_LINES) problems.push(`too long: ${file} has ${lines} lines (at most ${MAX_LINES})`);
    const visit = (node: ts.Node): void => {
      if (ts.isClassLike(node)) {
        const constructor = node.members.find(ts.isConstructorDeclaration);
        const count = constructor?.parameters.length ?? 0;
        if (count > MAX_COLLABORATORS) {
          const name = node.name?.text ?? '(anonymous class)';
          problems.push(`too wide: ${file} class ${name} takes ${count} collaborators (at most ${MAX_COLLABORATORS})`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS));
    if (problems.length > 0) found.set(file, problems);
  }
  return found;
}

const graph = importGraph();
const sizes = sizeProblems([...graph.keys()]);
const excused = { ...EXCEPTIONS, ...PENDING_SPLIT };
const problems = [
  ...upwardImports(graph),
  ...cycles(graph),
  ...[...sizes].filter(([file]) => !(file in excused)).flatMap(([, found]) => found),
];
// A listed file that now keeps the limits: its entry should go.
for (const file of Object.keys(excused)) {
  if (existsSync(join(root, file)) && !sizes.has(file))
    process.stdout.write(`note: ${file} keeps the limits now; remove it from its list in scripts/check-imports.ts\n`);
}
if (problems.length > 0) {
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  process.stderr.write(
    `${problems.length} problem(s): the layers are in docs/architecture.md, "Layers"; ` +
      `at most ${MAX_LINES} lines a file and ${MAX_COLLABORATORS} collaborators a class\n`,
  );
  process.exit(1);
}
const imports = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
process.stdout.write(
  `${graph.size} files, ${imports} imports: no cycle, no upward import (${LAYERS.map((l) => l.name).join(' < ')}); ` +
    `no file over ${MAX_LINES} lines, no class over ${MAX_COLLABORATORS} collaborators ` +
    `(${Object.keys(excused).length} listed: ${Object.keys(excused).join(', ')})\n`,
);
