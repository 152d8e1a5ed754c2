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
 * Self-contained (node: modules and PGlite only): under the TypeScript sources (tests) Node
 * loads this file as it is, stripping its types, where a sibling's `./x.js` does not exist.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, protocol, types } from '@electric-sql/pglite';
import type { messages } from '@electric-sql/pglite';

/** What the client sends: a message is a list of them, run in order. */
export type WorkerRequest = { id: number; op: 'query'; sql: string; params?: unknown[] } | { id: number; op: 'close' };

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

/** Prepared statements kept (the least recently used closed beyond): SQL built with values inlined must not grow them for ever. */
export const PREPARED_KEPT = 200;

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

const { serialize } = protocol;
type Field = { name: string; dataTypeID: number };
/** A statement parsed once: its parameters' types (to serialize the values as `query` does) and its columns. */
type Prepared = { name: string; paramTypes: number[]; fields: Field[] };
type QueryRequest = Extract<WorkerRequest, { op: 'query' }>;

function joined(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * The wire protocol's extended query, as PGlite's `query` runs it, but parsed once per SQL text
 * and bound and executed in one call into PostgreSQL; values serialized and rows parsed by
 * PGlite's own type handlers, so a row is what `query` returns.
 */
class Statements {
  private readonly prepared = new Map<string, Prepared>();
  private named = 0;
  /** A schema change was made in the transaction under way: undone if it rolls back. */
  private changedInTransaction = false;
  private readonly db: PGlite;

  // No parameter property: Node's type stripping (tests load this file as it is) refuses them.
  constructor(db: PGlite) {
    this.db = db;
  }

  /** The statement prepared (a DatabaseError if it does not parse); the most recent last in the map. */
  async prepare(sql: string): Promise<Prepared> {
    const known = this.prepared.get(sql);
    if (known) {
      this.prepared.delete(sql);
      this.prepared.set(sql, known);
      return known;
    }
    const name = `vgw_${++this.named}`;
    const replies = await this.db.execProtocolStream(
      joined([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]),
      { syncToFs: false },
    );
    const statement: Prepared = { name, paramTypes: [], fields: [] };
    for (const reply of replies) {
      if (reply.name === 'parameterDescription') {
        statement.paramTypes = (reply as messages.ParameterDescriptionMessage).dataTypeIDs;
      } else if (reply.name === 'rowDescription') {
        statement.fields = (reply as messages.RowDescriptionMessage).fields.map((f) => ({
          name: f.name,
          dataTypeID: f.dataTypeID,
        }));
      }
    }
    if (this.prepared.size >= PREPARED_KEPT) {
      const [oldSql, old] = this.prepared.entries().next().value!;
      this.prepared.delete(oldSql);
      await this.db.execProtocolStream(joined([serialize.close({ type: 'S', name: old.name }), serialize.sync()]), {
        syncToFs: false,
      });
    }
    this.prepared.set(sql, statement);
    return statement;
  }

  /**
   * Every statement prepared anew the next time: after a change of the schema (ALTER TABLE …) a
   * statement prepared before may return other columns than those kept with it.
   */
  async forgetAll(): Promise<void> {
    if (this.prepared.size === 0) return;
    const closes = [...this.prepared.values()].map(({ name }) => serialize.close({ type: 'S', name }));
    this.prepared.clear();
    await this.db.execProtocolStream(joined([...closes, serialize.sync()]), { syncToFs: false });
  }

  /**
   * After a statement run alone: all prepared anew after a change of the schema, and again when
   * the transaction it was made in ends or rolls back (one prepared meanwhile saw the change).
   */
  async after(sql: string): Promise<void> {
    if (!SCHEMA_SAFE.test(sql)) {
      this.changedInTransaction ||= this.db.isInTransaction();
      return this.forgetAll();
    }
    if (this.changedInTransaction && (ROLLBACK.test(sql) || !this.db.isInTransaction())) {
      this.changedInTransaction = this.db.isInTransaction();
      return this.forgetAll();
    }
  }

  /** Bind and Execute of one statement (no Sync). */
  bound(statement: Prepared, params: unknown[] = []): Uint8Array[] {
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serializer = this.db.serializers[statement.paramTypes[i]];
      return serializer ? serializer(param) : (param as { toString(): string }).toString();
    });
    return [serialize.bind({ statement: statement.name, values }), serialize.execute()];
  }

  /** Each statement's rows, in order, from the replies to their Executes (one CommandComplete each). */
  rows(statements: Prepared[], replies: messages.BackendMessage[]): unknown[][] {
    const out: unknown[][] = statements.map(() => []);
    let at = 0;
    for (const reply of replies) {
      if (reply.name === 'dataRow') {
        const fields = statements[at].fields;
        const values = (reply as messages.DataRowMessage).fields;
        // Cannot happen while every schema change is followed by `after`; said, never misread.
        if (values.length !== fields.length)
          throw new Error('a prepared statement returned other columns than described');
        const row: Record<string, unknown> = {};
        for (let i = 0; i < values.length; i++) {
          row[fields[i].name] = types.parseType(values[i], fields[i].dataTypeID, this.db.parsers);
        }
        out[at].push(row);
      } else if (reply.name === 'commandComplete' || reply.name === 'emptyQuery') {
        at += 1;
      }
    }
    return out;
  }

  /**
   * Runs the statements: their Executes, then one Sync. Outside a transaction the client began,
   * they are one implicit transaction that the Sync commits, all or (one failed) none. Rejects
   * with the first failure.
   */
  async run(requests: QueryRequest[]): Promise<unknown[][]> {
    const statements: Prepared[] = [];
    const parts: Uint8Array[] = [];
    for (const request of requests) {
      const statement = await this.prepare(request.sql);
      statements.push(statement);
      parts.push(...this.bound(statement, request.params));
    }
    parts.push(serialize.sync());
    const replies = await this.db.execProtocolStream(joined(parts));
    return this.rows(statements, replies);
  }
}

/**
 * What may change the schema (DDL: CREATE, ALTER, DROP, …): anything but reads, writes and a
 * transaction's own statements. Statements prepared before it are prepared again after it.
 */
const SCHEMA_SAFE =
  /^\s*(select|insert|update|delete|with|values|begin|start|commit|end|rollback|savepoint|release|set|show)\b/i;
const ROLLBACK = /^\s*rollback\b/i;

/** Writes that may share one transaction: data changes only (a transaction's own statements, DDL and reads run alone). */
const GROUPED = /^\s*(insert|update|delete|with)\b/i;

const port = parentPort;
if (!port) throw new Error('pglite-worker.ts runs as a worker thread only');
const { dataDir } = workerData as WorkerOptions;
const opening = PGlite.create(dataDir).then((db) => ({ db, statements: new Statements(db) }));
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

/** One statement in a transaction of its own (or in the client's, when it has begun one). */
async function alone(statements: Statements, request: QueryRequest): Promise<WorkerReply> {
  try {
    const [rows] = await statements.run([request]);
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
