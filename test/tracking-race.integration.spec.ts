/**
 * A resolution learned from the tracking service and a reconciliation list resolving the same
 * unknowns at the same moment (docs/api.md §8), on both ledger engines: one resolution per
 * inquiry (the key), and the list, the later of the two or the only one, has the last word:
 * where tracking said "not charged" first, the list's "charged" is a correction.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { Reconciliations } from '../src/ledger/reconciliation.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { TrackingBook, UNKNOWNS_GAUGE_DAYS } from '../src/tracking/tracking-book.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const metrics = { unsentCharges: { inc: () => undefined } } as never;
const INQUIRIES = 300;

let postgres: PostgresServer;
beforeAll(async () => {
  postgres = await PostgresServer.start();
});
afterAll(() => postgres?.stop());

describe.each(ledgerEngines(() => postgres.url, 'tracking-race'))('tracking and reconciliation on %s', (_e, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new LedgerStore(db, cipher, 90);
  });
  afterAll(() => closeLedger(db));

  it('append one resolution per inquiry, and the list corrects what tracking learned before it', async () => {
    const unknowns = Array.from({ length: INQUIRIES }, () =>
      queuedEntry({ status: 'unknown', charged: 'possibly', completedAt: undefined }),
    );
    await store.insert(unknowns);
    const ids = unknowns.map((entry) => entry.trackId);
    const book = new TrackingBook(store);
    const reconciliations = new Reconciliations(store, metrics);
    // Tracking learns "not charged" for each while the provider's list says all were charged.
    // Tracking learns "not charged" for each, one after the other from the last, while the
    // provider's list says all were charged: some before the list is compared, some during, some after.
    const learning = async () => {
      for (const id of [...ids].reverse()) await book.learned(id, 'no', false);
    };
    await Promise.all([reconciliations.reconcile(Readable.from([`trackId\n${ids.join('\n')}\n`])), learning()]);
    const rows = await db.query<{ track_id: string; revision: number; charged: string; resolved_by: string }>(
      `SELECT track_id::text, revision, charged, resolved_by FROM ledger_entries
       WHERE kind = 'reconciled' AND track_id = ANY($1::uuid[]) ORDER BY track_id, revision`,
      [ids],
    );
    for (const id of ids) {
      const mine = rows.filter((row) => row.track_id === id);
      // One resolution (revision 1), by whichever came first; the list's word is the latest.
      expect(mine.filter((row) => row.revision === 1)).toHaveLength(1);
      expect(mine[mine.length - 1]).toMatchObject({ charged: 'yes', resolved_by: 'reconciliation' });
      if (mine[0].resolved_by === 'tracking') {
        expect(mine).toEqual([
          { track_id: id, revision: 1, charged: 'no', resolved_by: 'tracking' },
          { track_id: id, revision: 2, charged: 'yes', resolved_by: 'reconciliation' },
        ]);
      } else expect(mine).toHaveLength(1);
    }
  }, 60_000);

  it('counts unknowns still standing between a day and UNKNOWNS_GAUGE_DAYS old: no younger, no older, none settled since', async () => {
    const book = new TrackingBook(store);
    const before = await book.unknownsOlderThanADay();
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();
    const unknown = (hours: number) =>
      queuedEntry({
        kind: 'overdue',
        status: 'unknown',
        charged: 'possibly',
        completedAt: undefined,
        createdAt: hoursAgo(hours),
      });
    const settledSince = unknown(50);
    await store.insert([
      unknown(48),
      unknown(72),
      unknown(12),
      unknown((UNKNOWNS_GAUGE_DAYS + 10) * 24),
      settledSince,
      { ...settledSince, kind: 'settled', status: 'failed', charged: 'no', completedAt: hoursAgo(49) },
    ]);
    expect(await book.unknownsOlderThanADay()).toBe(before + 2);
  });

  it("a lease lost mid-question stays the next holder's: the late replica's release or backoff leaves it alone", async () => {
    const entry = queuedEntry({ status: 'unknown', charged: 'possibly', completedAt: undefined });
    await store.insert([entry]);
    const book = new TrackingBook(store);
    const candidate = { trackId: entry.trackId, createdAt: new Date(entry.createdAt) };
    // Replica A's lease ends at once (a question slower than its lease); B takes it.
    const a = await book.lease(candidate, 0);
    const b = await book.lease(candidate, 60);
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    // A, late, gives its lease back: B still holds it, so C is refused.
    await book.release(a!);
    expect(await book.lease(candidate, 60)).toBeUndefined();
    // A, late, records "nothing learned": neither B's lease nor the count of questions is A's to change.
    await book.unanswered(a!, 'timeout', 1);
    expect(await book.lease(candidate, 60)).toBeUndefined();
    const [row] = await db.query<{ questions: number }>('SELECT questions FROM ledger_tracking WHERE track_id = $1', [
      entry.trackId,
    ]);
    expect(row.questions).toBe(0);
    // B's own release frees it.
    await book.release(b!);
    expect(await book.lease(candidate, 60)).toBeDefined();
  });
});
