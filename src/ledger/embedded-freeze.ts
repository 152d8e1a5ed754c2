import { Logger } from '@nestjs/common';

/** The embedded ledger as the freezer uses it: a statement once migrated (LedgerStore). */
export interface FreezableLedger {
  readonly db: { query<R>(sql: string, params?: unknown[]): Promise<R[]> };
  ready(): Promise<unknown>;
}

/** How often the age of the oldest unfrozen transaction id is read. */
export const FREEZE_CHECK_EVERY_MS = 3_600_000;
/** Frozen past this many transaction ids: autovacuum_freeze_max_age's default, ~10 % of the 2^31 horizon. */
export const FREEZE_AFTER_XIDS = 200_000_000;

/**
 * PGlite runs PostgreSQL single-user: no autovacuum, so no anti-wraparound VACUUM ever freezes
 * the ledger's rows, and single-user mode does not stop writes before the 2^31 horizon, past
 * which rows written long ago would read as written in the future (gone). Each write commit takes
 * one transaction id (estimated from the code: the drainer's batch about once a second; without
 * Redis the records' writes, up to 32 a commit, ~130 a second at 500 inquiries a second: the
 * horizon in about half a year). So at start and once an hour the age is read,
 * and past FREEZE_AFTER_XIDS the whole database is frozen: `VACUUM (FREEZE)` reads and writes
 * every page not yet all-frozen, the statements behind it waiting meanwhile (seconds on a large
 * ledger, once in months; logged). Test: test/embedded-freeze.integration.spec.ts.
 */
export class EmbeddedLedgerFreezer {
  private readonly logger = new Logger('EmbeddedLedgerFreezer');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<boolean> | null = null;

  constructor(
    private readonly ledger: FreezableLedger,
    private readonly afterXids = FREEZE_AFTER_XIDS,
  ) {}

  /** A check at once (a replica restarted more often than hourly would otherwise never check), then hourly. */
  onModuleInit(): void {
    clearInterval(this.timer);
    void this.check();
    this.timer = setInterval(() => void this.check(), FREEZE_CHECK_EVERY_MS);
    this.timer.unref();
  }

  /**
   * Stops the checks, without waiting for a freeze in progress: Nest runs this before the shutdown
   * sequence (src/http/shutdown-sequence.ts), so waiting here would keep the replica ready and
   * taking inquiries for as long as the VACUUM lasts. The ledger's close needs no wait either: the
   * worker runs its requests in arrival order, so the close runs after the VACUUM.
   */
  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** One check (one at a time): resolves true when it froze; a failure is logged, the next hour tries again. */
  check(): Promise<boolean> {
    this.running ??= this.checkOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async checkOnce(): Promise<boolean> {
    try {
      await this.ledger.ready();
      const [row] = await this.ledger.db.query<{ age: number }>(
        'SELECT age(datfrozenxid)::int AS age FROM pg_database WHERE datname = current_database()',
      );
      if (!row || row.age < this.afterXids) return false;
      this.logger.warn(`${row.age} transaction ids since the ledger was last frozen: VACUUM (FREEZE) now`);
      const started = Date.now();
      await this.ledger.db.query('VACUUM (FREEZE)');
      this.logger.log(`ledger frozen in ${Date.now() - started} ms`);
      return true;
    } catch (error) {
      this.logger.warn(`ledger not frozen: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
  }
}
