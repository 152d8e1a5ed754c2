import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { IN_MEMORY } from '../config/ledger-config.js';
import { DataDirLock } from './data-dir-lock.js';
import type { WorkerError, WorkerOptions, WorkerReply, WorkerRequest } from './pglite-worker.js';

/** One connection's queries: plain SQL with `$1` parameters, the same text on both engines. */
export interface SqlQueries {
  query<R>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * The ledger's PostgreSQL, behind the one interface both engines serve
 * (docs/decisions/0010-ledger-postgresql-client.md): a `pg` pool for a server, or PGlite
 * (PostgreSQL compiled to WebAssembly) in a worker thread when no server is configured.
 */
export abstract class LedgerDatabase implements SqlQueries {
  abstract readonly embedded: boolean;
  abstract query<R>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Runs `work` in one transaction on one connection (committed if it resolves). */
  abstract transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T>;
  abstract close(): Promise<void>;
}

/** PostgreSQL server through node-postgres (`pg`): a small pool; no query waits long for a connection. */
export class PgLedgerDatabase extends LedgerDatabase {
  readonly embedded = false;
  private readonly pool: pg.Pool;
  private readonly logger = new Logger('LedgerDatabase');

  constructor(url: string, options: { max?: number } = {}) {
    super();
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.max ?? 4,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      // A statement the server holds longer is cancelled: a stuck query never holds the drainer.
      statement_timeout: 60_000,
      application_name: 'verification-gateway',
    });
    // An idle connection that breaks (server restart) is dropped by the pool; without a
    // listener the 'error' event would end the process.
    this.pool.on('error', (error) => this.logger.warn(`idle PostgreSQL connection lost: ${error.message}`));
  }

  async query<R>(sql: string, params?: unknown[]): Promise<R[]> {
    const result = await this.pool.query(sql, params);
    return result.rows as R[];
  }

  async transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work({
        query: async <R>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as R[],
      });
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** The worker's file beside this one: `.ts` under the sources (tests), `.js` once built. */
const WORKER_FILE = new URL(
  import.meta.url.endsWith('.ts') ? './pglite-worker.ts' : './pglite-worker.js',
  import.meta.url,
);

/** PGlite's own files: a folder inside LEDGER_DATA_DIR, beside the lock (initdb wants it empty). */
const PGDATA = 'pglite';

/** A failed statement as the caller would get it in the thread: PostgreSQL's fields (`code`) kept. */
function restored(fields: WorkerError): Error {
  const { name, message, ...rest } = fields;
  return Object.assign(new Error(message), rest, { name });
}

/**
 * PGlite, one connection, for one replica (the sandbox, a single-node install): an RPC client
 * over the port of the worker thread that runs it (pglite-worker.ts; decision 0013). Nothing
 * PGlite does (its start, every statement) runs on the gateway's event loop. Statements are
 * sent in call order; a transaction has the connection to itself: its BEGIN, statements and
 * COMMIT (or ROLLBACK) go in a row while other calls wait their turn. So a transaction's `work`
 * must use its `tx`: a call on the database itself inside it would wait for ever.
 */
export class PgliteLedgerDatabase extends LedgerDatabase {
  readonly embedded = true;
  /** Resolves once PGlite is open in its worker; rejects if it could not be opened. */
  readonly opened: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { rows: unknown[]; resolve: (rows: unknown[]) => void; reject: (error: Error) => void }
  >();
  private nextId = 1;
  /** Set once the database is closed or its worker is gone: every later call fails with it. */
  private failure: Error | null = null;
  /** The connection's turn: held by a transaction (or a call queued behind one). */
  private held = false;
  private readonly waiting: Array<() => void> = [];
  private closing: Promise<void> | null = null;

  private constructor(
    /** An absolute directory, or `memory://`. */
    readonly dataDir: string,
    private readonly lock: DataDirLock | null,
  ) {
    super();
    this.worker = new Worker(WORKER_FILE, {
      workerData: {
        dataDir: dataDir === IN_MEMORY ? IN_MEMORY : join(dataDir, PGDATA),
      } satisfies WorkerOptions,
    });
    let open!: () => void;
    let failed!: (error: Error) => void;
    this.opened = new Promise<void>((resolve, reject) => ((open = resolve), (failed = reject)));
    // Awaited by the caller that needs it; never an unhandled rejection here.
    this.opened.catch(() => undefined);
    this.worker.on('message', (reply: WorkerReply) => {
      if (reply.id === 0) return 'error' in reply ? failed(restored(reply.error)) : open();
      const call = this.pending.get(reply.id);
      if (!call) return;
      if ('error' in reply) {
        this.pending.delete(reply.id);
        call.reject(restored(reply.error));
      } else if (reply.more) {
        call.rows.push(...reply.rows);
      } else {
        this.pending.delete(reply.id);
        call.resolve(call.rows.length === 0 ? reply.rows : [...call.rows, ...reply.rows]);
      }
    });
    const gone = (error: Error) => {
      this.failure ??= error;
      failed(error);
      for (const call of this.pending.values()) call.reject(error);
      this.pending.clear();
    };
    this.worker.on('error', gone);
    this.worker.on('exit', (code) => gone(new Error(`the embedded ledger's worker exited (code ${code})`)));
  }

  /**
   * Takes LEDGER_DATA_DIR (created if missing; refused, naming it, while another process holds
   * it) and starts PGlite's worker; resolves before PGlite is open (`opened`): calls made
   * meanwhile wait for it.
   */
  static async start(dataDir: string = IN_MEMORY): Promise<PgliteLedgerDatabase> {
    const lock = dataDir === IN_MEMORY ? null : await DataDirLock.take(dataDir);
    return new PgliteLedgerDatabase(dataDir, lock);
  }

  /** start(), then waits until PGlite is open (tests, benches). */
  static async open(dataDir: string = IN_MEMORY): Promise<PgliteLedgerDatabase> {
    const db = await PgliteLedgerDatabase.start(dataDir);
    try {
      await db.opened;
    } catch (error) {
      await db.close();
      throw error;
    }
    return db;
  }

  private send<R>(request: { op: 'query'; sql: string; params?: unknown[] } | { op: 'close' }): Promise<R[]> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      this.pending.set(id, { rows: [], resolve: resolve as (rows: unknown[]) => void, reject });
      this.worker.postMessage({ ...request, id } satisfies WorkerRequest);
    });
  }

  /** Resolves when it is the caller's turn (at once when nobody holds it); release() passes it on. */
  private turn(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  query<R>(sql: string, params?: unknown[]): Promise<R[]> {
    // Not behind anyone: sent now (statements outside transactions are pipelined to the worker).
    if (!this.held) return this.send<R>({ op: 'query', sql, params });
    return this.turn().then(() => {
      try {
        return this.send<R>({ op: 'query', sql, params });
      } finally {
        this.release();
      }
    });
  }

  async transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T> {
    await this.turn();
    let open = true;
    const tx: SqlQueries = {
      query: <R>(sql: string, params?: unknown[]) =>
        open ? this.send<R>({ op: 'query', sql, params }) : Promise.reject(new Error('the transaction has ended')),
    };
    try {
      await tx.query('BEGIN');
      const result = await work(tx);
      await tx.query('COMMIT');
      return result;
    } catch (error) {
      await tx.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      open = false;
      this.release();
    }
  }

  /** Waits for the transaction in progress, closes PGlite (its files consistent), ends the worker, frees the directory. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.turn();
      try {
        const opened = await this.opened.then(
          () => true,
          () => false,
        );
        if (opened) await this.send({ op: 'close' }).catch(() => undefined);
        this.failure ??= new Error('the embedded ledger is closed');
        await this.worker.terminate();
        await this.lock?.release();
      } finally {
        this.release();
      }
    })();
    return this.closing;
  }
}
