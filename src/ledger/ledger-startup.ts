import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { LedgerDatabase } from './ledger-database.js';
import { LedgerStore } from './ledger.store.js';

/** Where the embedded ledger stands, for readiness (health/ledger.health.ts). */
export type LedgerStartupState =
  | { phase: 'opening' }
  | { phase: 'ready' }
  | { phase: 'failed'; reason: string }
  /** Its worker died after start; a new one is being made (ledger-database.ts, RESPAWN_MS). */
  | { phase: 'recovering'; reason: string };

/**
 * Opens and migrates the embedded ledger at start-up, in the background: never on the first
 * request (whose caller would wait seconds), and without holding up `/health/live` (PGlite
 * opens in its worker thread). `/health/ready` and `/health/startup` stay 503 until it is done.
 * If it fails, the error is logged and the gateway stays not ready (the startup probe restarts
 * the pod); nothing retries it: a directory PGlite cannot open does not mend itself. A worker
 * that dies later makes the gateway not ready until its successor is open (`recovering`).
 * A server (LEDGER_DATABASE_URL) does not hold readiness: while PostgreSQL is down, entries
 * wait in the queue and inquiries go on (docs/operations.md, "Ledger").
 */
@Injectable()
export class LedgerStartup implements OnModuleInit {
  private readonly logger = new Logger('LedgerDatabase');
  private current: LedgerStartupState;
  private openingSettled!: () => void;
  /** Settles once the embedded ledger is open or has failed to open (at once for a server). */
  readonly opened = new Promise<void>((resolve) => (this.openingSettled = resolve));

  constructor(
    private readonly db: LedgerDatabase,
    private readonly store: LedgerStore,
  ) {
    this.current = db.embedded ? { phase: 'opening' } : { phase: 'ready' };
  }

  /** Whether there is anything to wait for: the embedded ledger only. */
  get embedded(): boolean {
    return this.db.embedded;
  }

  get state(): LedgerStartupState {
    const outage = this.current.phase === 'ready' ? this.db.outage : null;
    return outage === null ? this.current : { phase: 'recovering', reason: outage };
  }

  onModuleInit(): void {
    if (!this.db.embedded) return this.openingSettled();
    void this.openAndMigrate(performance.now());
  }

  /**
   * Migrates; a worker that died after it had opened (the migration cut short) is waited out and
   * the migration run again on its successor, once per new worker (test/ledger-worker-crash.e2e.spec.ts,
   * 'comes back ready when its worker dies during the first migration').
   */
  private async openAndMigrate(began: number): Promise<void> {
    for (;;) {
      try {
        await this.store.ready();
        this.current = { phase: 'ready' };
        this.logger.log(`embedded ledger open and migrated in ${Math.round(performance.now() - began)} ms`);
        return this.openingSettled();
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'unknown error';
        if (this.db.outage === null) {
          this.current = { phase: 'failed', reason };
          this.logger.error(`the embedded ledger could not be opened; the gateway stays not ready: ${reason}`);
          return this.openingSettled();
        }
        this.logger.warn(`the embedded ledger's migration was cut short (${reason}); again once a new worker is open`);
        await this.db.serving();
      }
    }
  }
}
