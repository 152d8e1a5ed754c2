import { Logger } from '@nestjs/common';
import { storeCall } from './store-unavailable.error.js';

/**
 * The database that holds the single-node records (records.migration.ts): the embedded ledger's
 * PGlite, through its worker (LedgerStore satisfies it). `ready` migrates it once before the first
 * statement; until it has, and while the worker is being re-created, calls fail as a store outage.
 */
export interface RecordsDatabase {
  readonly db: { query<R>(sql: string, params?: unknown[]): Promise<R[]> };
  ready(): Promise<unknown>;
}

/** One statement on the records, once migrated; its failure is 503 `store_unavailable` (storeCall). */
export function recordsCall<R>(
  records: RecordsDatabase,
  operation: string,
  sql: string,
  params: unknown[],
): Promise<R[]> {
  return storeCall(operation, async () => {
    await records.ready();
    return records.db.query<R>(sql, params);
  });
}

/** The tables with an `expires_at` (epoch ms) and their keys, swept of expired rows. */
const EXPIRING = [
  ['vgw_records', 'track_id'],
  ['vgw_idempotency', 'key_sha256'],
  ['vgw_answers', 'question_key'],
  ['vgw_in_flight', 'flight_key'],
] as const;

/** Rows deleted per statement, and statements per table per sweep: a sweep is bounded, the next one goes on. */
export const SWEEP_BATCH = 2_000;
const SWEEP_ROUNDS = 10;
/** How often expired rows are deleted (reads ignore them already; this only frees the space). */
export const SWEEP_EVERY_MS = 60_000;

/**
 * Deletes expired rows, as Redis evicts expired keys: each read and write ignores them already,
 * so how soon they go only bounds the disk. At most SWEEP_ROUNDS × SWEEP_BATCH rows per table
 * per sweep, each batch one statement (short in the worker's queue behind inquiries).
 */
export class ExpiredRowSweeper {
  private readonly logger = new Logger('ExpiredRowSweeper');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | null = null;

  constructor(
    private readonly records: RecordsDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts sweeping every `everyMs`; a second start replaces the first timer (stop() clears the one there is). */
  start(everyMs = SWEEP_EVERY_MS): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), everyMs);
    this.timer.unref();
  }

  stop(): Promise<unknown> {
    clearInterval(this.timer);
    return this.running ?? Promise.resolve();
  }

  /** One sweep (one at a time); resolves with the rows deleted. */
  sweep(): Promise<number> {
    this.running ??= this.sweepOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async sweepOnce(): Promise<number> {
    let deleted = 0;
    try {
      await this.records.ready();
      const now = this.now();
      for (const [table, key] of EXPIRING) {
        for (let round = 0; round < SWEEP_ROUNDS; round++) {
          const rows = await this.records.db.query<{ n: number }>(
            // The expiry again on the deleted row: a conditional write, whatever claims it meanwhile.
            `WITH gone AS (DELETE FROM ${table} WHERE expires_at <= $1 AND ${key} IN
               (SELECT ${key} FROM ${table} WHERE expires_at <= $1 LIMIT ${SWEEP_BATCH}) RETURNING 1)
             SELECT count(*)::int AS n FROM gone`,
            [now],
          );
          const n = rows[0]?.n ?? 0;
          deleted += n;
          if (n < SWEEP_BATCH) break;
        }
      }
      // The embedded PostgreSQL runs single-user, without autovacuum: without this, the space of
      // deleted and updated rows is never reused and the tables grow with every inquiry ever made,
      // expired or not (test/single-node-records.integration.spec.ts, "reuses the space"). Plain
      // VACUUM takes no lock that holds a reader or writer, reads only the pages changed since the
      // last one (the visibility map) and an index only when enough of it is dead. Each sweep:
      // rows are updated (settled, completed) between sweeps that delete none. After it the
      // worker prepares every statement anew, plans fitted to the tables now (pglite-statements.ts).
      await this.records.db.query(`VACUUM ${EXPIRING.map(([table]) => table).join(', ')}`);
    } catch (error) {
      // The next sweep tries again; reads ignore expired rows meanwhile.
      this.logger.warn(`expired records not swept: ${error instanceof Error ? error.message : String(error)}`);
    }
    return deleted;
  }
}

/** The sweeper as a provider: started with the application, stopped (its sweep awaited) at shutdown. */
export class SweeperLifecycle {
  constructor(private readonly sweeper: ExpiredRowSweeper | null) {}

  onModuleInit(): void {
    this.sweeper?.start();
  }

  onModuleDestroy(): Promise<unknown> {
    return this.sweeper?.stop() ?? Promise.resolve();
  }
}
