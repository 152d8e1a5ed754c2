/**
 * The statements of the embedded ledger's worker (pglite-worker.ts): the wire protocol's extended
 * query, as PGlite's `query` runs it, but each SQL text parsed once, then bound, executed and
 * synced in one call into PostgreSQL (`query` parses and describes it every time, in six calls);
 * values serialized and rows parsed by PGlite's own type handlers, so a row is what `query`
 * returns (test/pglite-worker.integration.spec.ts). docs/performance.md, "Single-node records".
 *
 * Loaded by the worker only, as it is under the TypeScript sources (types stripped): node: modules
 * and PGlite only at run time, no parameter properties.
 */
import { protocol, types } from '@electric-sql/pglite';
import type { messages, PGlite } from '@electric-sql/pglite';
import type { Replies, Wire } from './pglite-wire.js';

/** Prepared statements kept (the least recently used closed beyond): SQL texts made at run time must not grow them for ever. */
export const PREPARED_KEPT = 200;

/** A query as the worker is asked it. */
export type QueryRequest = { id: number; op: 'query'; sql: string; params?: unknown[] };

const { serialize } = protocol;
type Field = { name: string; dataTypeID: number };
/** A statement parsed once: its parameters' types (to serialize the values as `query` does) and its columns. */
type Prepared = { name: string; paramTypes: number[]; fields: Field[] };

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
export class Statements {
  private readonly prepared = new Map<string, Prepared>();
  private named = 0;
  /** A schema change was made in the transaction under way: undone if it rolls back. */
  private changedInTransaction = false;
  private readonly db: PGlite;
  private readonly wire: Wire;
  private readonly replies: Replies;

  // No parameter properties: Node's type stripping (tests load this file as it is) refuses them.
  constructor(db: PGlite, wire: Wire, replies: Replies) {
    this.db = db;
    this.wire = wire;
    this.replies = replies;
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

  /** Whether a transaction the client began is open (a refused statement is not run again in it). */
  inTransaction(): boolean {
    return this.db.isInTransaction();
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
    const { wire, replies } = this;
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

/**
 * What may change the schema (DDL: CREATE, ALTER, DROP, …): anything but reads, writes and a
 * transaction's own statements. Statements prepared before it are prepared again after it.
 * VACUUM stays off the list on purpose: the records' sweep runs it each minute (sql-records.ts),
 * and the statements prepared anew after it get plans fitted to the tables' size of the moment.
 * Kept across their growth, a generic plan made the sweep's DELETE take seconds a run
 * (test/single-node-records.integration.spec.ts, "reuses the space" and after it, time out).
 */
const SCHEMA_SAFE =
  /^\s*(select|insert|update|delete|with|values|begin|start|commit|end|rollback|savepoint|release|set|show)\b/i;
const ROLLBACK = /^\s*rollback\b/i;
