import { randomUUID } from 'node:crypto';
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
