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

  /** The values as PGlite's `query` sends them: by the parameter's type's serializer, else as text. */
  values(statement: Prepared, params: unknown[] = []): Array<string | null> {
    return params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serializer = this.db.serializers[statement.paramTypes[i]];
      return serializer ? serializer(param) : (param as { toString(): string }).toString();
    });
  }

  /** A row as PGlite's `query` makes it: by column name (the last of a repeated one), values by PGlite's parsers. */
  row(statement: Prepared, values: Array<string | null>): Record<string, unknown> {
    const fields = statement.fields;
    // Cannot happen while every schema change is followed by `after`; said, never misread.
    if (values.length !== fields.length) throw new Error('a prepared statement returned other columns than described');
    const row: Record<string, unknown> = {};
    for (let i = 0; i < values.length; i++) {
      row[fields[i].name] = types.parseType(values[i], fields[i].dataTypeID, this.db.parsers);
    }
    return row;
  }

  /**
   * Runs the statements: their Binds and Executes, then one Sync. Outside a transaction the client
   * began, they are one implicit transaction that the Sync commits, all or (one failed) none.
   * Rejects with the first failure (PostgreSQL's error, as PGlite's parser makes it).
   */
  async run(requests: QueryRequest[]): Promise<unknown[][]> {
    const statements: Prepared[] = [];
    for (const request of requests) statements.push(await this.prepare(request.sql));
    wire.start();
    for (let i = 0; i < requests.length; i++) {
      wire.bindExecute(statements[i].name, this.values(statements[i], requests[i].params));
    }
    wire.sync();
    replies.start();
    await this.db.execProtocolRawStream(wire.message(), { onRawData: (bytes) => replies.add(bytes) });
    const { rows, error } = replies.read(requests.length);
    if (error) throw error;
    return rows.map((values, i) => values.map((v) => this.row(statements[i], v)));
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const FIRST_BYTES = 64 * 1024;
const KEPT_BYTES = 4 * 1024 * 1024;

/** A buffer that grows, kept from one run to the next. */
class Bytes {
  bytes = new Uint8Array(FIRST_BYTES);
  view = new DataView(this.bytes.buffer);
  at = 0;

  start(): void {
    this.at = 0;
    // A large reply (a 5 000-row page) is not kept for every small one after it.
    if (this.bytes.length > KEPT_BYTES) this.room(0, true);
  }

  room(length: number, shrink = false): void {
    if (this.at + length <= this.bytes.length && !shrink) return;
    let size = shrink ? FIRST_BYTES : this.bytes.length * 2;
    while (this.at + length > size) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.bytes.subarray(0, this.at));
    this.bytes = bigger;
    this.view = new DataView(bigger.buffer);
  }
}

/**
 * The frontend's Bind, Execute and Sync messages (PostgreSQL's protocol, "Message Formats")
 * written straight into one buffer: values as text, each UTF-8 encoded once, its length what
 * was written. PGlite's own writer (measured: with its parser, a third of the worker's CPU per
 * statement) allocates and copies per message and measures each string apart.
 */
class Wire extends Bytes {
  bindExecute(statement: string, values: Array<string | null>): void {
    this.room(6 + statement.length * 3 + 4);
    this.bytes[this.at] = 0x42; // Bind
    const lengthAt = this.at + 1;
    this.at += 5;
    this.bytes[this.at++] = 0; // the unnamed portal
    this.cstring(statement);
    this.view.setInt16(this.at, 0); // no parameter format codes: all text
    this.view.setInt16(this.at + 2, values.length);
    this.at += 4;
    for (const value of values) {
      if (value === null) {
        this.room(4);
        this.view.setInt32(this.at, -1);
        this.at += 4;
        continue;
      }
      this.room(4 + value.length * 3);
      const { written } = encoder.encodeInto(value, this.bytes.subarray(this.at + 4));
      this.view.setInt32(this.at, written);
      this.at += 4 + written;
    }
    this.room(2 + 10);
    this.view.setInt16(this.at, 0); // no result format codes: all text
    this.at += 2;
    this.view.setInt32(lengthAt, this.at - lengthAt);
    // Execute the unnamed portal, every row.
    this.bytes.set([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0], this.at);
    this.at += 10;
  }

  sync(): void {
    this.room(5);
    this.bytes.set([0x53, 0, 0, 0, 4], this.at);
    this.at += 5;
  }

  /** What was written (read by PostgreSQL before the run returns: not copied). */
  message(): Uint8Array {
    return this.bytes.subarray(0, this.at);
  }

  private cstring(text: string): void {
    this.at += encoder.encodeInto(text, this.bytes.subarray(this.at)).written;
    this.bytes[this.at++] = 0;
  }
}

/**
 * The backend's replies to a run, read from PostgreSQL's bytes: each DataRow's values (text, or
 * null) and a CommandComplete (or EmptyQueryResponse) ending each statement's rows. Everything
 * else (BindComplete, ReadyForQuery, notices) is passed over; an ErrorResponse is made a
 * DatabaseError by PGlite's own parser, with all its fields.
 */
class Replies extends Bytes {
  /** PGlite hands over a view of its WebAssembly memory, valid during the call only: copied. */
  add(chunk: Uint8Array): void {
    this.room(chunk.length);
    this.bytes.set(chunk, this.at);
    this.at += chunk.length;
  }

  read(statements: number): { rows: Array<Array<Array<string | null>>>; error?: Error } {
    const rows: Array<Array<Array<string | null>>> = Array.from({ length: statements }, () => []);
    const { bytes, view, at: end } = this;
    let statement = 0;
    let error: Error | undefined;
    for (let at = 0; at + 5 <= end;) {
      const type = bytes[at];
      const next = at + 1 + view.getInt32(at + 1);
      if (type === 0x44) {
        // DataRow
        const count = view.getInt16(at + 5);
        const values: Array<string | null> = new Array<string | null>(count);
        let p = at + 7;
        for (let i = 0; i < count; i++) {
          const length = view.getInt32(p);
          p += 4;
          values[i] = length < 0 ? null : decoder.decode(bytes.subarray(p, p + length));
          if (length > 0) p += length;
        }
        rows[statement]?.push(values);
      } else if (type === 0x43 || type === 0x49) {
        // CommandComplete, EmptyQueryResponse
        statement += 1;
      } else if (type === 0x45 && !error) {
        // ErrorResponse: the first is the one (the rest of the run was skipped).
        new protocol.Parser().parse(bytes.slice(at, next), (message) => {
          if (message instanceof Error) error = message;
        });
      }
      at = next;
    }
    return { rows, error };
  }
}

const wire = new Wire();
const replies = new Replies();

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
