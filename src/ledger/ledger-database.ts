import { Logger } from '@nestjs/common';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/** One connection's queries: plain SQL with `$1` parameters, the same text on both engines. */
export interface SqlQueries {
  query<R>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * The ledger's PostgreSQL, behind the one interface both engines serve
 * (docs/decisions/0010-ledger-postgresql-client.md): a `pg` pool for a server, or PGlite
 * (PostgreSQL compiled to WebAssembly) in the process when no server is configured.
 */
export abstract class LedgerDatabase implements SqlQueries {
  abstract readonly embedded: boolean;
  /** False only for an embedded database not yet opened (nothing written or read so far). */
  get isOpen(): boolean {
    return true;
  }
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

/**
 * PGlite in the process: one connection, for one replica (the sandbox, a trial). Opened on
 * first use: starting it (an initdb in WebAssembly) takes seconds of CPU and ~200 MiB, which a
 * gateway that never writes an entry need not pay.
 */
export class PgliteLedgerDatabase extends LedgerDatabase {
  readonly embedded = true;
  private opened: Promise<PGlite> | null = null;

  /** `dataDir`: a directory to keep the data in; unset, in memory (lost with the process). */
  constructor(private readonly dataDir?: string) {
    super();
  }

  static async open(dataDir?: string): Promise<PgliteLedgerDatabase> {
    const db = new PgliteLedgerDatabase(dataDir);
    await db.db();
    return db;
  }

  private db(): Promise<PGlite> {
    this.opened ??= import('@electric-sql/pglite').then(({ PGlite }) => PGlite.create(this.dataDir));
    return this.opened;
  }

  override get isOpen(): boolean {
    return this.opened !== null;
  }

  async query<R>(sql: string, params?: unknown[]): Promise<R[]> {
    return (await (await this.db()).query<R>(sql, params)).rows;
  }

  async transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T> {
    return (await this.db()).transaction((tx) =>
      work({ query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows }),
    );
  }

  async close(): Promise<void> {
    if (this.opened) await (await this.opened).close();
  }
}
