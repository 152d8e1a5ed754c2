/**
 * The embedded ledger's PGlite, in a worker thread of its own
 * (docs/decisions/0013-embedded-ledger-off-the-main-thread.md): its WebAssembly start (seconds
 * of CPU) and every statement run here, so the gateway's event loop never waits on them.
 * PgliteLedgerDatabase (ledger-database.ts) is its only client, over the worker's port: one
 * request, one reply, handled strictly in the order they arrive.
 *
 * Self-contained (node: modules, packages and sql-literals.ts, loaded by its own name): under the
 * TypeScript sources (tests) Node loads this file as it is, stripping its types, where a
 * sibling's `./x.js` does not exist.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/** What the client sends. */
export type WorkerRequest = { id: number; op: 'query'; sql: string; params?: unknown[] } | { id: number; op: 'close' };

/** A failed statement's error as plain data: PostgreSQL's fields (`code` the SQLSTATE) kept. */
export interface WorkerError {
  name: string;
  message: string;
  [field: string]: unknown;
}

/**
 * What the worker answers: id 0 once PGlite is open (or failed to open). Rows come in slices
 * (`more` on all but the last): each slice is copied into the gateway's thread in a task of its
 * own, so a 5 000-row page never holds its event loop in one piece.
 */
export type WorkerReply = { id: number; rows: unknown[]; more?: true } | { id: number; error: WorkerError };

/** Rows per reply message. */
export const SLICE_ROWS = 500;

export interface WorkerOptions {
  /** An absolute directory, or `memory://`. */
  dataDir: string;
}

function plain(error: unknown): WorkerError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const fields: WorkerError = { name: error.name, message: error.message };
  // DatabaseError's own fields (code, detail, constraint, …): primitives only, cloneable.
  for (const [key, value] of Object.entries(error)) {
    if (value === undefined || (typeof value === 'object' && value !== null)) continue;
    if (typeof value !== 'function') fields[key] = value;
  }
  return fields;
}

// Its sibling as this file is loaded: `.ts` under the sources (tests), `.js` once built.
const { inlineParameters } = (await import(
  new URL(import.meta.url.endsWith('.ts') ? './sql-literals.ts' : './sql-literals.js', import.meta.url).href
)) as typeof import('./sql-literals.js');

const port = parentPort;
if (!port) throw new Error('pglite-worker.ts runs as a worker thread only');
const { dataDir } = workerData as WorkerOptions;
const opening = PGlite.create(dataDir);
let chain: Promise<unknown> = opening.then(
  () => port.postMessage({ id: 0, rows: [] } satisfies WorkerReply),
  (error: unknown) => port.postMessage({ id: 0, error: plain(error) } satisfies WorkerReply),
);

/** ES2024's string methods (Node 20+), not yet in the TypeScript lib this project compiles against. */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

async function handle(request: WorkerRequest): Promise<WorkerReply> {
  const db = await opening;
  if (request.op === 'close') {
    await db.close();
    return { id: request.id, rows: [] };
  }
  // A lone surrogate as U+FFFD, as node-postgres sends it to a server: PGlite's protocol writer
  // miscounts its bytes and cuts the end off the value (test/ledger-store.integration.spec.ts).
  const params = request.params?.map((value) =>
    typeof value === 'string' && !(value as WellFormed).isWellFormed() ? (value as WellFormed).toWellFormed() : value,
  );
  // One call into PGlite instead of six where the values can be written in (sql-literals.ts).
  const inlined = inlineParameters(request.sql, params);
  const result = inlined === undefined ? await db.query(request.sql, params) : (await db.exec(inlined)).at(-1);
  return { id: request.id, rows: result?.rows ?? [] };
}

function post(reply: WorkerReply): void {
  if (!('rows' in reply) || reply.rows.length <= SLICE_ROWS) return port!.postMessage(reply);
  for (let i = 0; i < reply.rows.length; i += SLICE_ROWS) {
    const rows = reply.rows.slice(i, i + SLICE_ROWS);
    port!.postMessage(i + SLICE_ROWS < reply.rows.length ? { id: reply.id, rows, more: true } : { id: reply.id, rows });
  }
}

port.on('message', (request: WorkerRequest) => {
  // One after the other, in arrival order: the client's transaction is its BEGIN, its
  // statements and its COMMIT sent in a row, and nothing else may run between them.
  chain = chain.then(() =>
    handle(request).then(
      (reply) => post(reply),
      (error: unknown) => port.postMessage({ id: request.id, error: plain(error) } satisfies WorkerReply),
    ),
  );
});
