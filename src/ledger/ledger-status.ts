import { Injectable } from '@nestjs/common';
import { LedgerDatabase } from './ledger-database.js';
import { LedgerQueue } from './ledger-queue.js';

/**
 * What the console's "Now" panel asks of the ledger (docs/api.md §4 and §7): PostgreSQL
 * reachability and the queue of entries on their way to it. LedgerModule provides it as
 * `LEDGER_STATUS`; a build without the ledger answers `ledger: null` ("not configured").
 */
export interface LedgerStatusSource {
  status(): Promise<LedgerStatus>;
}

export interface LedgerStatus {
  /** PostgreSQL (or the embedded PGlite) answers now. */
  databaseReachable: boolean;
  /** `postgres` with LEDGER_DATABASE_URL, `embedded` (PGlite) without. */
  database: 'postgres' | 'embedded';
  /** Entries waiting in the Redis queue to be written. */
  queueDepth: number;
  /** Age in seconds of the oldest waiting entry (0 when none waits). */
  queueOldestAgeSeconds: number;
}

/** Injection token of the ledger's `LedgerStatusSource` (optional for the console). */
export const LEDGER_STATUS = Symbol('LEDGER_STATUS');

/** How long the reachability probe may take: the status route answers within a second or two. */
const PROBE_TIMEOUT_MS = 1_000;

/** The ledger's status: a bounded `SELECT 1`, and the queue's backlog (depth, oldest age). */
@Injectable()
export class LedgerStatusReporter implements LedgerStatusSource {
  constructor(
    private readonly database: LedgerDatabase,
    private readonly queue: LedgerQueue,
  ) {}

  async status(): Promise<LedgerStatus> {
    const [reachable, backlog] = await Promise.all([this.probe(), this.queue.backlog(Date.now())]);
    return {
      databaseReachable: reachable,
      database: this.database.embedded ? 'embedded' : 'postgres',
      queueDepth: backlog.depth,
      queueOldestAgeSeconds: backlog.oldestAgeSeconds,
    };
  }

  private async probe(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)));
    try {
      return await Promise.race([
        this.database.query('SELECT 1').then(
          () => true,
          () => false,
        ),
        timedOut,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
