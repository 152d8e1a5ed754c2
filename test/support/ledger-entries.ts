import { randomUUID } from 'node:crypto';
import type { LedgerDatabase } from '../../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../../src/ledger/ledger-entry.js';

/** A settled, charged Shahkar entry made now, as the ledger's queue carries it; `overrides` change any field. */
export function queuedEntry(overrides: Partial<QueuedEntry> = {}): QueuedEntry {
  const now = new Date().toISOString();
  return {
    trackId: randomUUID(),
    kind: 'settled',
    clientId: 'svc-a',
    operation: 'shahkar',
    requestHandlingType: 'standard',
    status: 'succeeded',
    charged: 'yes',
    costUnits: 1,
    createdAt: now,
    completedAt: now,
    upstreamCode: 200,
    requestId: 'req-1',
    ...overrides,
  };
}

/**
 * Resolves once the ledger holds at least `minimum.entries` entries and `minimum.inquiries` distinct
 * inquiries of these trackIds (a drainer writes them a few ms after they are queued; the database
 * has no event to await, so it is read every 50 ms, the spec's timeout bounding the wait).
 */
export async function untilEntriesWritten(
  db: LedgerDatabase,
  trackIds: string[],
  minimum: { entries?: number; inquiries?: number },
): Promise<void> {
  for (;;) {
    const [row] = await db.query<{ entries: number; inquiries: number }>(
      'SELECT count(*)::int AS entries, count(DISTINCT track_id)::int AS inquiries FROM ledger_entries WHERE track_id = ANY($1::uuid[])',
      [trackIds],
    );
    if (row.entries >= (minimum.entries ?? 0) && row.inquiries >= (minimum.inquiries ?? 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
