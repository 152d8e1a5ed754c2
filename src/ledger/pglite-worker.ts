/**
 * The embedded ledger's PGlite, in a worker thread of its own
 * (docs/decisions/0013-embedded-ledger-off-the-main-thread.md): its WebAssembly start (seconds
 * of CPU) and every statement run here, so the gateway's event loop never waits on them.
 * PgliteLedgerDatabase (ledger-database.ts) is its only client, over the worker's port: each
 * message a list of requests, each request one reply, handled strictly in the order they arrive.
 *
 * Two things make a statement cheap here (docs/performance.md, "Single-node records"): each SQL
 * text is prepared once and then bound and executed in one call into PostgreSQL (PGlite's `query`
 * parses and describes it every time, in six calls), and writes that wait together outside a
 * transaction run as one transaction (one commit).
 *
 * Under the TypeScript sources (tests) Node loads this file as it is, stripping its types, where a
 * sibling's `./x.js` does not exist: its siblings are imported by the name that exists.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import type * as StatementsModule from './pglite-statements.js';
import type * as WireModule from './pglite-wire.js';

/** A sibling module: `.ts` under the sources, `.js` once built. */
const sibling = (name: string) =>
  new URL(`./${name}${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;
const { Statements } = (await import(sibling('pglite-statements'))) as typeof StatementsModule;
const { Replies, Wire } = (await import(sibling('pglite-wire'))) as typeof WireModule;
type Statements = StatementsModule.Statements;
type QueryRequest = StatementsModule.QueryRequest;

/** What the client sends: a message is a list of them, run in order. */
export type WorkerRequest = QueryRequest | { id: number; op: 'close' };

/** A failed statement's error as plain data: PostgreSQL's fields (`code` the SQLSTATE) kept. */
export interface WorkerError {
  name: string;
  message: string;
  [field: string]: unknown;
}

/**
 * What the worker answers, a list per message: id 0 once PGlite is open (or failed to open).
 * Rows come in slices (`more` on all but the last), a message each: each slice is copied into the
 * gateway's thread in a task of its own, so a 5 000-row page never holds its event loop in one piece.
 */
export type WorkerReply = { id: number; rows: unknown[]; more?: true } | { id: number; error: WorkerError };

/** Rows per reply message. */
export const SLICE_ROWS = 500;

/** Writes run in one transaction at most: a group's first reply waits for its last statement. */
export const GROUP_MAX = 32;

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

/** Writes that may share one transaction: data changes only (a transaction's own statements, DDL and reads run alone). */
const GROUPED = /^\s*(insert|update|delete|with)\b/i;

const port = parentPort;
if (!port) throw new Error('pglite-worker.ts runs as a worker thread only');
const { dataDir } = workerData as WorkerOptions;
const opening = PGlite.create(dataDir).then((db) => ({
  db,
  statements: new Statements(db, new Wire(), new Replies()),
}));
const queue: WorkerRequest[] = [];
let draining = false;

function post(replies: WorkerReply[]): void {
  const whole: WorkerReply[] = [];
  for (const reply of replies) {
    if (!('rows' in reply) || reply.rows.length <= SLICE_ROWS) {
      whole.push(reply);
      continue;
    }
    for (let i = 0; i < reply.rows.length; i += SLICE_ROWS) {
      const rows = reply.rows.slice(i, i + SLICE_ROWS);
      send([i + SLICE_ROWS < reply.rows.length ? { id: reply.id, rows, more: true } : { id: reply.id, rows }]);
    }
  }
  if (whole.length > 0) send(whole);
}

/** A reply that cannot be copied to the gateway's thread (a value no structured clone takes) fails its calls, not the worker. */
function send(replies: WorkerReply[]): void {
  try {
    port!.postMessage(replies);
  } catch (error) {
    port!.postMessage(replies.map(({ id }) => ({ id, error: plain(error) })) satisfies WorkerReply[]);
  }
}

/**
 * PostgreSQL's refusal of a prepared statement whose columns changed under it without a DDL
 * statement of ours (a function that altered the table, SET search_path): PGlite's `query`,
 * parsing every time, never meets it.
 */
const isStalePlan = (error: unknown) =>
  (error as { code?: string }).code === '0A000' && /cached plan must not change result type/.test(String(error));

/** One statement in a transaction of its own (or in the client's, when it has begun one). */
async function alone(statements: Statements, request: QueryRequest): Promise<WorkerReply> {
  try {
    let rows: unknown[];
    try {
      [rows] = await statements.run([request]);
    } catch (error) {
      if (!isStalePlan(error)) throw error;
      // Prepared anew; run again only outside a transaction (nothing of it ran: refused at its Bind).
      await statements.forgetAll();
      if (statements.inTransaction()) throw error;
      [rows] = await statements.run([request]);
    }
    return { id: request.id, rows };
  } catch (error) {
    if (error instanceof Error) Object.assign(error, { query: request.sql });
    return { id: request.id, error: plain(error) };
  } finally {
    await statements.after(request.sql).catch(() => undefined);
  }
}

/**
 * Writes sent outside a transaction and waiting together, committed together: one commit instead
 * of one each. A claim's reply is sent only after that commit (the durability rule: on disk
 * before the inquiry goes upstream). If one fails, none is kept and each runs again alone: every
 * request gets the answer it would have got on its own.
 */
async function together(statements: Statements, requests: QueryRequest[]): Promise<WorkerReply[]> {
  try {
    const rows = await statements.run(requests);
    return requests.map((request, i) => ({ id: request.id, rows: rows[i] }));
  } catch {
    const replies: WorkerReply[] = [];
    for (const request of requests) replies.push(await alone(statements, request));
    return replies;
  }
}

/** Everything queued, in order: runs of writes grouped, the rest one by one. */
async function drain(): Promise<void> {
  draining = true;
  try {
    let opened: Awaited<typeof opening> | undefined;
    let failure: unknown;
    await opening.then(
      (o) => (opened = o),
      (error: unknown) => (failure = error),
    );
    while (queue.length > 0) {
      const request = queue.shift()!;
      if (!opened) {
        post([{ id: request.id, error: plain(failure) }]);
      } else if (request.op === 'close') {
        await opened.db.close().then(
          () => post([{ id: request.id, rows: [] }]),
          (error: unknown) => post([{ id: request.id, error: plain(error) }]),
        );
      } else if (GROUPED.test(request.sql) && queue[0]?.op === 'query' && !opened.db.isInTransaction()) {
        const group: QueryRequest[] = [request];
        while (group.length < GROUP_MAX && queue[0]?.op === 'query' && GROUPED.test(queue[0].sql)) {
          group.push(queue.shift() as QueryRequest);
        }
        post(group.length === 1 ? [await alone(opened.statements, request)] : await together(opened.statements, group));
      } else {
        post([await alone(opened.statements, request)]);
      }
    }
  } finally {
    draining = false;
  }
}

void opening.then(
  () => port.postMessage([{ id: 0, rows: [] }] satisfies WorkerReply[]),
  (error: unknown) => port.postMessage([{ id: 0, error: plain(error) }] satisfies WorkerReply[]),
);

port.on('message', (requests: WorkerRequest[]) => {
  // One after the other, in arrival order: the client's transaction is its BEGIN, its
  // statements and its COMMIT sent in a row, and nothing else may run between them.
  queue.push(...requests);
  if (!draining) void drain();
});
