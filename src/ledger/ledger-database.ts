import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { IN_MEMORY } from '../config/ledger-config.js';
import { DataDirLock } from './data-dir-lock.js';
import {
  ConnectionTurns,
  PgliteConnection,
  RESPAWN_MS,
  settledOk,
  type ConnectionRequest,
  type WorkerEvents,
} from './pglite-connection.js';

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

  /** Why the database cannot serve now while it mends by itself (the embedded ledger's worker re-created); null when it can. */
  get outage(): string | null {
    return null;
  }

  /** Resolves once the database can serve again (at once when it can; never once closed). */
  serving(): Promise<void> {
    return Promise.resolve();
  }

  /** A shutdown's last writes: an embedded worker waiting out its backoff is re-created now. */
  recoverNow(): void {}

  /** Changes when the database behind may have been replaced (a new embedded worker: `memory://` then starts empty). */
  get generation(): number {
    return 0;
  }
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

/** PGlite's own files: a folder inside LEDGER_DATA_DIR, beside the lock (initdb wants it empty). */
const PGDATA = 'pglite';

/**
 * PGlite, one connection, for one replica (the sandbox, a single-node install): an RPC client
 * over the port of the worker thread that runs it (pglite-connection.ts, pglite-worker.ts;
 * decision 0013). Nothing PGlite does (its start, every statement) runs on the gateway's event
 * loop. Statements are sent in call order; a transaction has the connection to itself: its
 * BEGIN, statements and COMMIT (or ROLLBACK) go in a row while other calls wait their turn. So a
 * transaction's `work` must use its `tx`: a call on the database itself inside it would wait for ever.
 *
 * A worker that ends unasked after it had opened (a crash, an out-of-memory) is re-created with
 * a bounded backoff (RESPAWN_MS); meanwhile `outage` says why and every call fails at once (the
 * drainer's entries stay queued, readiness is 503). The directory's lock belongs to this process,
 * not to the worker: it stays held across the re-creation, so no other process can take the
 * directory between the death and the new worker (test/ledger-worker-crash.e2e.spec.ts).
 */
export class PgliteLedgerDatabase extends LedgerDatabase {
  readonly embedded = true;
  /** Resolves once PGlite is open in its first worker; rejects if it could not be opened. */
  readonly opened: Promise<void>;
  private connection: PgliteConnection;
  private readonly pgdata: string;
  private readonly logger = new Logger('LedgerDatabase');
  /** Set while the worker is gone and its successor not yet open. */
  private lost: Error | null = null;
  private respawns = 0;
  private respawnTimer: NodeJS.Timeout | undefined;
  private workerGeneration = 0;
  /** The connection's turn: held by a transaction (or a call queued behind one). */
  private readonly turns = new ConnectionTurns();
  private closing: Promise<void> | null = null;
  /** Resolved when a new worker is open (respawn). */
  private servingAgain: Promise<void> | null = null;
  private nowServing = () => {};

  private constructor(
    /** An absolute directory, or `memory://`. */
    readonly dataDir: string,
    private readonly lock: DataDirLock | null,
    private readonly events: WorkerEvents,
  ) {
    super();
    this.pgdata = dataDir === IN_MEMORY ? IN_MEMORY : join(dataDir, PGDATA);
    this.connection = this.connect();
    this.opened = this.connection.opened;
  }

  /**
   * Takes LEDGER_DATA_DIR (created if missing; refused, naming it, while another process holds
   * it) and starts PGlite's worker; resolves before PGlite is open (`opened`): calls made
   * meanwhile wait for it.
   */
  static async start(dataDir: string = IN_MEMORY, events: WorkerEvents = {}): Promise<PgliteLedgerDatabase> {
    const lock = dataDir === IN_MEMORY ? null : await DataDirLock.take(dataDir);
    return new PgliteLedgerDatabase(dataDir, lock, events);
  }

  /** start(), then waits until PGlite is open (tests, benches). */
  static async open(dataDir: string = IN_MEMORY): Promise<PgliteLedgerDatabase> {
    const db = await PgliteLedgerDatabase.start(dataDir);
    await db.opened.catch(async (error: unknown) => {
      await db.close();
      throw error;
    });
    return db;
  }

  override get outage(): string | null {
    // The worker's end is known at once (its calls rejected), before connect()'s watch sets `lost`.
    const lost = this.lost ?? this.connection.lostAfterOpening;
    return lost && !this.closing ? lost.message : null;
  }

  override get generation(): number {
    return this.workerGeneration;
  }

  override serving(): Promise<void> {
    if (this.outage === null) return Promise.resolve();
    return (this.servingAgain ??= new Promise<void>((resolve) => (this.nowServing = resolve)));
  }

  /** A worker, watched: one that ends unasked once it had opened is replaced. */
  private connect(): PgliteConnection {
    const connection = new PgliteConnection(this.pgdata);
    this.workerGeneration += 1;
    const [began, first] = [Date.now(), this.workerGeneration === 1];
    void connection.ended.then(async (error) => {
      const hadOpened = await settledOk(connection.opened);
      // Asked (close), or the first worker never opened: a directory PGlite cannot open does not
      // mend itself (LedgerStartup reports it; the startup probe restarts the pod).
      if (this.closing || (first && !hadOpened)) return;
      if (Date.now() - began >= RESPAWN_MS.max) this.respawns = 0;
      const delay = Math.min(RESPAWN_MS.first * 2 ** Math.min(this.respawns, 16), RESPAWN_MS.max);
      this.lost ??= error;
      if (hadOpened) {
        this.logger.error(`${error.message}; the ledger is not ready until a new worker is open (entries wait queued)`);
        this.events.lost?.(error);
      } else {
        this.logger.warn(`a new embedded ledger worker could not be opened (${error.message}); again in ${delay} ms`);
      }
      this.respawns += 1;
      this.respawnTimer = setTimeout(() => this.respawn(), delay);
      // Never keeps the process alive by itself (a shutdown cancels it).
      this.respawnTimer.unref();
    });
    return connection;
  }

  override recoverNow(): void {
    if (this.respawnTimer === undefined || this.closing) return;
    clearTimeout(this.respawnTimer);
    this.respawn();
  }

  private respawn(): void {
    this.respawnTimer = undefined;
    if (this.closing) return;
    const connection = this.connect();
    this.connection = connection;
    connection.opened.then(
      () => {
        if (this.connection !== connection || this.closing) return;
        this.lost = null;
        if (this.dataDir === IN_MEMORY) {
          this.logger.error(
            "LEDGER_DATA_DIR=memory://: the new worker's ledger is empty, the entries written before are lost",
          );
        }
        this.logger.log("the embedded ledger's worker was re-created; the ledger is ready");
        this.nowServing();
        this.servingAgain = null;
        this.events.replaced?.();
      },
      // Its end follows (terminated here): connect()'s watch schedules the next attempt.
      (error: unknown) => {
        const reason = error instanceof Error ? error : new Error(String(error));
        void connection.terminate(reason);
      },
    );
  }

  private send<R>(request: ConnectionRequest, connection = this.connection): Promise<R[]> {
    if (this.lost) return Promise.reject(this.lost);
    return connection.send<R>(request);
  }

  query<R>(sql: string, params?: unknown[]): Promise<R[]> {
    // Not behind anyone: sent now (statements outside transactions are pipelined to the worker).
    if (!this.turns.held) return this.send<R>({ op: 'query', sql, params });
    return this.turns.take().then(() => {
      try {
        return this.send<R>({ op: 'query', sql, params });
      } finally {
        this.turns.release();
      }
    });
  }

  async transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T> {
    await this.turns.take();
    let open = true;
    const worker = this.connection; // once it has ended, the statements fail: never run on the next, outside a transaction
    const tx: SqlQueries = {
      query: <R>(sql: string, params?: unknown[]) =>
        open ? this.send<R>({ op: 'query', sql, params }, worker) : Promise.reject(new Error('the transaction ended')),
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
      this.turns.release();
    }
  }

  /** Waits for the transaction in progress, closes PGlite (its files consistent), ends the worker, frees the directory. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.respawnTimer);
      await this.turns.take();
      try {
        const connection = this.connection;
        if (await settledOk(connection.opened)) await connection.send({ op: 'close' }).catch(() => undefined);
        this.lost ??= new Error('the embedded ledger is closed');
        await connection.terminate(this.lost);
        await this.lock?.release();
      } finally {
        this.turns.release();
      }
    })();
    return this.closing;
  }
}
