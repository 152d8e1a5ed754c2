/**
 * The shape of src/ (docs/architecture.md, "Layers"): the import graph has no cycle and no
 * upward arrow, no file is longer than MAX_LINES and no class takes more than MAX_COLLABORATORS
 * constructor parameters. Run: `node scripts/check-imports.ts [root]` (also part of `npm run
 * lint`; root defaults to this repository). Prints every offender and exits 1; prints a summary
 * and exits 0 otherwise.
 *
 * Every TypeScript and JavaScript file of src/ is read as a syntax tree, so quotes, template
 * literals and line breaks change nothing. Every relative import counts: type-only ones too (a
 * type names what a layer depends on), re-exports, `import()` calls (tracing.ts loads
 * tracing-sdk.ts that way) and `require()` calls. Specs are held to the no-cycle rule only. Each
 * rule, and each way past it that a reading by regular expression let through, is a case of
 * test/check-imports.integration.spec.ts.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * Bottom to top: a file may import from its own layer or any layer below it. The longest
 * matching path decides a file's layer.
 */
const LAYERS: ReadonlyArray<{ name: string; paths: readonly string[] }> = [
  { name: 'vocabulary', paths: ['src/crypto/', 'src/vocabulary/'] },
  {
    // The operations' catalog and its field types: read by config at start and by every layer above.
    name: 'catalog',
    paths: ['src/inquiry/catalog/', 'src/upstream/inquiry-operation.ts'],
  },
  { name: 'config', paths: ['src/config/'] },
  { name: 'problem', paths: ['src/problem/'] },
  { name: 'openapi', paths: ['src/openapi.ts'] },
  { name: 'observability', paths: ['src/observability/'] },
  { name: 'store', paths: ['src/store/'] },
  { name: 'upstream', paths: ['src/upstream/'] },
  { name: 'token', paths: ['src/token/'] },
  { name: 'caller-auth', paths: ['src/caller-auth/'] },
  { name: 'budget', paths: ['src/budget/', 'src/accounting/inquiry-prices.ts'] },
  { name: 'ledger', paths: ['src/ledger/'] },
  { name: 'tracking', paths: ['src/tracking/'] },
  { name: 'reuse', paths: ['src/reuse/'] },
  { name: 'inquiry', paths: ['src/inquiry/'] },
  { name: 'webhooks', paths: ['src/webhooks/'] },
  { name: 'accounting', paths: ['src/accounting/'] },
  { name: 'health', paths: ['src/health/'] },
  { name: 'console', paths: ['src/console/'] },
  { name: 'wiring', paths: ['src/http/', 'src/app.module.ts', 'src/bootstrap.ts', 'src/main.ts'] },
];

/** A file a newcomer reads top-down in one sitting. */
const MAX_LINES = 300;
/** Constructor parameters of one class (ConfigService counts): more means it does too much. */
const MAX_COLLABORATORS = 6;
/** The source files of src/, and the specs among them. */
const SOURCE = /\.[cm]?[jt]s$/;
const SPEC = /\.spec\.[cm]?[jt]s$/;

/**
 * A file let past a limit: the entry names each limit it excuses with a ceiling the file may not
 * grow past; any other limit holds as for every file.
 */
export interface Allowance {
  file: string;
  reason: string;
  lines?: number;
  collaborators?: number;
}

/** Files allowed past a limit for good. Upward imports have no such list. */
export const EXCEPTIONS: readonly Allowance[] = [
  {
    file: 'src/console/gateway-status.ts',
    collaborators: 7,
    reason:
      'GatewayStatusReader reads one light from each part it reports on (metrics, store, token, upstream, routes, ledger): grouping them would hide what the page reports',
  },
];

/**
 * Files being split on other branches right now; this list goes when they are merged. Nothing
 * else may be added to it, and no ceiling raised.
 */
export const PENDING_SPLIT: readonly Allowance[] = [];

/** What one file is: its syntax tree and how long it is. */
interface SourceFile {
  path: string;
  lines: number;
  tree: ts.SourceFile;
}

function readSources(root: string): SourceFile[] {
  return readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .map((file) => join('src', file).split('\\').join('/'))
    .filter((path) => SOURCE.test(path))
    .sort()
    .map((path) => {
      const text = readFileSync(join(root, path), 'utf8');
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      // The file name tells the parser TypeScript from JavaScript (.mts, .cjs, ...).
      return { path, lines, tree: ts.createSourceFile(path, text, ts.ScriptTarget.Latest) };
    });
}

/** The module specifiers a file names: imports, re-exports, `import()`, `require()`, `import('x').T`. */
function specifiers(tree: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const specifier = specifierOf(node);
    // Only a constant names a file: `import(`./${name}`)` cannot be followed.
    if (specifier && ts.isStringLiteralLike(specifier)) found.push(specifier.text);
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return found;
}

function specifierOf(node: ts.Node): ts.Node | undefined {
  if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return node.moduleSpecifier;
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
    return node.moduleReference.expression;
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) return node.argument.literal;
  const callsImport = (callee: ts.Expression): boolean =>
    callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');
  if (ts.isCallExpression(node) && callsImport(node.expression)) return node.arguments[0];
  return undefined;
}

/** Every source file of src/ (specs included) with the src/ files it imports. */
function importGraph(sources: readonly SourceFile[]): Map<string, string[]> {
  const known = new Set(sources.map((source) => source.path));
  // In TypeScript './x.js' names x.ts and './x.mjs' names x.mts (Node's ESM rule).
  const resolveTarget = (path: string): string => (known.has(path) ? path : path.replace(/\.([cm]?)js$/, '.$1ts'));
  const graph = new Map<string, string[]>();
  for (const { path, tree } of sources) {
    const targets = specifiers(tree)
      .filter((specifier) => specifier.startsWith('./') || specifier.startsWith('../'))
      .map((specifier) => resolveTarget(join(dirname(path), specifier).split('\\').join('/')))
      .filter((target) => target.startsWith('src/'));
    graph.set(path, targets);
  }
  return graph;
}

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

function upwardImports(graph: Map<string, string[]>): string[] {
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    // A spec is no part of its layer's production code: it may boot the whole gateway.
    if (SPEC.test(file)) continue;
    for (const target of targets) {
      const [from, to] = [layerOf(file), layerOf(target)];
      if (to > from) problems.push(`upward: ${file} (${LAYERS[from].name}) imports ${target} (${LAYERS[to].name})`);
    }
  }
  return problems;
}

/**
 * Two folders whose production files import each other (config ↔ ledger, say): each is then part
 * of the other, whatever the layers say of single files. A folder owns what it needs from below
 * or gives it away, never both ways.
 */
function mutualFolders(graph: Map<string, string[]>): string[] {
  // A feature's folder (src/ledger/…), or a layer's own folder inside one (src/inquiry/catalog/);
  // the wiring files directly in src/ import every feature and are no feature's.
  const folders = LAYERS.flatMap((layer) =>
    layer.paths.filter((path) => path.endsWith('/') && path.split('/').length > 3),
  );
  const folderOf = (file: string) =>
    folders.find((folder) => file.startsWith(folder)) ?? file.split('/').slice(0, 2).join('/');
  const edges = new Map<string, string>();
  for (const [file, targets] of graph) {
    if (SPEC.test(file)) continue;
    for (const target of targets) {
      const [from, to] = [folderOf(file), folderOf(target)];
      if (file.split('/').length === 2 || target.split('/').length === 2) continue;
      if (from !== to && !edges.has(`${from} ${to}`)) edges.set(`${from} ${to}`, `${file} imports ${target}`);
    }
  }
  const problems: string[] = [];
  for (const [pair, example] of edges) {
    const [from, to] = pair.split(' ');
    const back = edges.get(`${to} ${from}`);
    if (back && from < to) problems.push(`mutual: ${from}/ and ${to}/ import each other (${example}; ${back})`);
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

/**
 * Each class of a file with its widest constructor: the implementation (the one with a body)
 * and every overload count, since each says what the class is built from.
 */
function classWidths(tree: ts.SourceFile): Array<{ name: string; collaborators: number }> {
  const classes: Array<{ name: string; collaborators: number }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassLike(node)) {
      const widths = node.members.filter(ts.isConstructorDeclaration).map((c) => c.parameters.length);
      classes.push({ name: node.name?.text ?? '(anonymous class)', collaborators: Math.max(0, ...widths) });
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return classes;
}

/** A file's measures against the limits, or the ceilings its entry gives; specs aside. */
function limitProblems(sources: readonly SourceFile[], listed: ReadonlyMap<string, Allowance>): string[] {
  const problems: string[] = [];
  const over = (ceiling: number | undefined, limit: number): string =>
    ceiling === undefined ? `at most ${limit}` : `at most ${ceiling}, its listed ceiling: it may not grow`;
  for (const { path, lines, tree } of sources) {
    if (SPEC.test(path)) continue;
    const allowance = listed.get(path);
    if (lines > (allowance?.lines ?? MAX_LINES))
      problems.push(`too long: ${path} has ${lines} lines (${over(allowance?.lines, MAX_LINES)})`);
    for (const { name, collaborators } of classWidths(tree)) {
      if (collaborators > (allowance?.collaborators ?? MAX_COLLABORATORS)) {
        const limit = over(allowance?.collaborators, MAX_COLLABORATORS);
        problems.push(`too wide: ${path} class ${name} takes ${collaborators} collaborators (${limit})`);
      }
    }
  }
  return problems;
}

/** A listed measure below its ceiling: the ceiling comes down, or the limit leaves the entry. */
function ceilingNote(file: string, what: string, measured: number, ceiling: number, limit: number): string[] {
  if (measured <= limit) return [`${file} keeps the limit of ${limit} ${what} now: drop ${what} from its entry`];
  return measured < ceiling ? [`${file} is at ${measured} ${what} now: lower its ceiling from ${ceiling}`] : [];
}

/** Entries that excuse nothing or name a file that is gone; notes for ceilings that can come down. */
function listProblems(sources: readonly SourceFile[], listed: ReadonlyMap<string, Allowance>) {
  const problems: string[] = [];
  const notes: string[] = [];
  const byPath = new Map(sources.map((source) => [source.path, source]));
  for (const [file, { lines, collaborators }] of listed) {
    const source = byPath.get(file);
    if (!source) problems.push(`gone: ${file} is listed but no longer exists; remove it from the list`);
    else if (lines === undefined && collaborators === undefined)
      problems.push(`listed for nothing: ${file}'s entry names no limit it excuses (lines, collaborators)`);
    else {
      if (lines !== undefined) notes.push(...ceilingNote(file, 'lines', source.lines, lines, MAX_LINES));
      const widest = Math.max(0, ...classWidths(source.tree).map((c) => c.collaborators));
      if (collaborators !== undefined)
        notes.push(...ceilingNote(file, 'collaborators', widest, collaborators, MAX_COLLABORATORS));
    }
  }
  return { problems, notes };
}

/** Everything the check finds in the tree at `root`, with the files excused as `allowances` say. */
export function checkTree(root: string, allowances: readonly Allowance[] = [...EXCEPTIONS, ...PENDING_SPLIT]) {
  const sources = readSources(root);
  const graph = importGraph(sources);
  const listed = new Map(allowances.map((allowance) => [allowance.file, allowance]));
  const lists = listProblems(sources, listed);
  const problems = [
    ...upwardImports(graph),
    ...mutualFolders(graph),
    ...cycles(graph),
    ...limitProblems(sources, listed),
    ...lists.problems,
  ];
  const imports = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
  return { problems, notes: lists.notes, files: graph.size, imports, listed: [...listed.keys()] };
}

function main(root: string): void {
  const { problems, notes, files, imports, listed } = checkTree(root);
  for (const note of notes) process.stdout.write(`note: ${note} (scripts/check-imports.ts)\n`);
  if (problems.length > 0) {
    for (const problem of problems) process.stderr.write(`${problem}\n`);
    process.stderr.write(
      `${problems.length} problem(s): the layers are in docs/architecture.md, "Layers"; ` +
        `at most ${MAX_LINES} lines a file and ${MAX_COLLABORATORS} collaborators a class\n`,
    );
    process.exit(1);
  }
  process.stdout.write(
    `${files} files, ${imports} imports: no cycle, no upward import (${LAYERS.map((l) => l.name).join(' < ')}); ` +
      `no file over ${MAX_LINES} lines, no class over ${MAX_COLLABORATORS} collaborators ` +
      `(${listed.length} listed, none past its ceiling: ${listed.join(', ')})\n`,
  );
}

// Run as a script; a test imports checkTree without running it.
if (import.meta.main) main(resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..')));
