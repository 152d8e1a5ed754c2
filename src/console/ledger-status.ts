/**
 * What the console's "Now" panel asks of the ledger (docs/api.md §6): PostgreSQL reachability and
 * the queue of entries on their way to it. The ledger module binds `LEDGER_STATUS` to its own
 * implementation; until it does, `GET /admin/status` answers `ledger: null` ("not configured").
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

/** Injection token of the ledger's `LedgerStatusSource` (optional: absent before the ledger is wired). */
export const LEDGER_STATUS = Symbol('LEDGER_STATUS');
