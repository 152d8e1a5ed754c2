/**
 * PostgreSQL's wire protocol ("Message Formats") as the embedded ledger's worker speaks it
 * (pglite-statements.ts): the frontend's Bind, Execute and Sync written straight into one reused
 * buffer, the backend's replies read straight from its bytes. PGlite's own writer and parser
 * (an object per message, a copy per field, each string measured apart) cost a third of the
 * worker's CPU per statement (docs/performance.md, "Single-node records").
 *
 * Loaded by the worker only, as it is under the TypeScript sources (types stripped): node: modules
 * and PGlite only at run time, no parameter properties.
 */
import { protocol } from '@electric-sql/pglite';

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
export class Wire extends Bytes {
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
export class Replies extends Bytes {
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
