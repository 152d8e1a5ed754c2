/**
 * The console's reads (src/ledger/inquiry-list.ts, ledger-trends.ts) on a real PostgreSQL server
 * and on PGlite: one row per inquiry by its latest fact (a settlement over an overdue entry, a
 * correction over a resolution), filters judged on that fact, keyset pages that neither repeat nor
 * skip an inquiry when many share one instant, and trends that agree with usage.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import { listCursorOf } from '../src/ledger/admin-query.js';
import { InquiryList, type ListCursor } from '../src/ledger/inquiry-list.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { trends, unitsSpentSince } from '../src/ledger/ledger-trends.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { moneyOf } from '../src/ledger/money.js';
import { unitsJson } from '../src/ledger/unit-sums.js';
import { ProblemException } from '../src/problem/problem.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const FROM = new Date('2031-05-01T00:00:00Z');
const TO = new Date('2031-06-01T00:00:00Z');
const at = (day: number, hour = 12) => new Date(Date.UTC(2031, 4, day, hour)).toISOString();
/** A cursor as a client could forge one: the list's own encoding of any instant. */
const cursorAt = (createdAt: string) =>
  Buffer.from(JSON.stringify([createdAt, '00000000-0000-4000-8000-000000000000'])).toString('base64url');

function refusal(call: () => unknown): { status: number; code: string; field?: string } {
  try {
    call();
  } catch (error) {
    if (error instanceof ProblemException)
      return { status: error.status, code: error.code, field: error.toBody().errors?.[0]?.field };
    throw error;
  }
  throw new Error('accepted');
}

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(ledgerEngines(() => server.url, 'console-reads'))('the console reads on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  let list: InquiryList;
  // An unknown later settled; an unknown resolved as charged then corrected to not charged; a failure (code 15).
  const settledLate = queuedEntry({
    clientId: 'shop',
    createdAt: at(3),
    kind: 'overdue',
    status: 'unknown',
    charged: 'possibly',
  });
  const corrected = queuedEntry({
    clientId: 'shop',
    createdAt: at(4),
    kind: 'overdue',
    status: 'unknown',
    charged: 'possibly',
    costUnits: 3,
  });
  const failed = queuedEntry({
    clientId: 'shop',
    createdAt: at(5),
    status: 'failed',
    charged: 'no',
    upstreamCode: 15,
    upstreamMessage: 'mismatch',
  });
  // Seven inquiries of one instant: the keyset's tie on createdAt is broken by trackId.
  const crowd = Array.from({ length: 7 }, () => queuedEntry({ clientId: 'crowd', createdAt: at(6) }));
  const entries: QueuedEntry[] = [
    settledLate,
    { ...settledLate, kind: 'settled', status: 'succeeded', charged: 'yes' },
    corrected,
    { ...corrected, kind: 'reconciled', revision: 1, status: 'succeeded', charged: 'yes' },
    { ...corrected, kind: 'reconciled', revision: 2, status: 'failed', charged: 'no' },
    failed,
    ...crowd,
  ];

  beforeAll(async () => {
    db = await open();
    store = new LedgerStore(db, cipher, 90);
    await store.insert(entries);
    list = new InquiryList(store);
  });
  afterAll(() => closeLedger(db));

  it('lists one row per inquiry, its latest fact, newest first; filters judge that fact', async () => {
    const shop = await list.page({ from: FROM, to: TO, clientId: 'shop' }, undefined, 10);
    expect(shop.inquiries.map((e) => [e.trackId, e.kind, e.status, e.charged])).toEqual([
      [failed.trackId, 'settled', 'failed', 'no'],
      [corrected.trackId, 'reconciled', 'failed', 'no'],
      [settledLate.trackId, 'settled', 'succeeded', 'yes'],
    ]);
    expect(shop.inquiries[0].upstreamMessage).toBe('mismatch');
    expect(shop.next).toBeUndefined();
    const unknown = await list.page({ from: FROM, to: TO, status: 'unknown' }, undefined, 10);
    expect(unknown.inquiries).toEqual([]);
    const notCharged = await list.page({ from: FROM, to: TO, clientId: 'shop', charged: 'no' }, undefined, 10);
    expect(notCharged.inquiries.map((e) => e.trackId)).toEqual([failed.trackId, corrected.trackId]);
    // No reuse recorded in this ledger: reused=true matches nothing, reused=false everything.
    expect((await list.page({ from: FROM, to: TO, reused: true }, undefined, 10)).inquiries).toEqual([]);
    expect((await list.page({ from: FROM, to: TO, reused: false }, undefined, 20)).inquiries).toHaveLength(10);
  });

  it('pages by keyset through inquiries of one instant, each once, and the export yields the same rows', async () => {
    const seen: string[] = [];
    let after: ListCursor | undefined;
    do {
      const page = await list.page({ from: FROM, to: TO, clientId: 'crowd' }, after, 3);
      seen.push(...page.inquiries.map((e) => e.trackId));
      after = page.next;
    } while (after);
    expect(seen).toEqual(
      crowd
        .map((e) => e.trackId)
        .sort()
        .reverse(),
    );
    const exported: string[] = [];
    for await (const entry of list.all({ from: FROM, to: TO, clientId: 'crowd' })) exported.push(entry.trackId);
    expect(exported).toEqual(seen);
  });

  it('counts trends by latest fact, agreeing with usage; a failure spends nothing', async () => {
    const found = await trends(store, FROM, TO, 'Asia/Tehran');
    const shop = found.rows.filter((row) => row.clientId === 'shop').map(({ spent: _spent, ...row }) => row);
    expect(shop).toEqual([
      {
        day: '2031-05-03',
        clientId: 'shop',
        operation: 'shahkar',
        inquiries: 1,
        succeeded: 1,
        failed: 0,
        unknown: 0,
        reused: 0,
        unitsSpent: 1n,
        refusedBudget: 0,
        refusedQuota: 0,
      },
      {
        day: '2031-05-04',
        clientId: 'shop',
        operation: 'shahkar',
        inquiries: 1,
        succeeded: 0,
        failed: 1,
        unknown: 0,
        reused: 0,
        unitsSpent: 0n,
        refusedBudget: 0,
        refusedQuota: 0,
      },
      {
        day: '2031-05-05',
        clientId: 'shop',
        operation: 'shahkar',
        inquiries: 1,
        succeeded: 0,
        failed: 1,
        unknown: 0,
        reused: 0,
        unitsSpent: 0n,
        refusedBudget: 0,
        refusedQuota: 0,
      },
    ]);
    expect(found.failures.filter((f) => f.clientId === 'shop')).toEqual([
      { day: '2031-05-04', clientId: 'shop', upstreamCode: 200, upstreamMessage: null, count: 1 },
      { day: '2031-05-05', clientId: 'shop', upstreamCode: 15, upstreamMessage: 'mismatch', count: 1 },
    ]);
    const [spent, sinceThe5th] = await unitsSpentSince(store, [FROM, new Date(at(5, 0))], TO);
    const monthly = await usage(store, FROM, TO, 'month');
    for (const row of monthly) expect(spent.get(row.clientId) ?? 0).toBe(row.unitsSpent);
    expect(spent.get('crowd')).toBe(7n);
    // From the 5th: the crowd's 7; the shop's failure spent nothing.
    expect([...sinceThe5th]).toEqual([['crowd', 7n]]);
  });

  it('refuses a forged cursor (a day its month lacks, year 0) as 400 naming after, before any query', async () => {
    for (const createdAt of ['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-04-31T10:00:00Z'])
      expect(refusal(() => listCursorOf({ after: cursorAt(createdAt) }))).toEqual({
        status: 400,
        code: 'validation_failed',
        field: 'after',
      });
    // The earliest instant the rule lets through is one this engine compares.
    const earliest = listCursorOf({ after: cursorAt('0001-01-01T00:00:00Z') });
    expect((await list.page({ from: FROM, to: TO }, earliest, 10)).inquiries).toEqual([]);
  });

  it('sums units past 2^31 exactly in trends, usage and the forecast, and prices them exactly', async () => {
    // Three inquiries at the largest price INQUIRY_PRICES accepts, in a month of their own.
    const july = { from: new Date('2031-07-01T00:00:00Z'), to: new Date('2031-08-01T00:00:00Z') };
    const big = Array.from({ length: 3 }, () =>
      queuedEntry({ clientId: 'big', createdAt: '2031-07-02T12:00:00.000Z', costUnits: 1_000_000_000 }),
    );
    await store.insert(big);
    const [trendRow] = (await trends(store, july.from, july.to, 'UTC')).rows;
    const [usageRow] = await usage(store, july.from, july.to, 'month');
    const [spent] = await unitsSpentSince(store, [july.from], july.to);
    expect([trendRow.unitsSpent, usageRow.unitsSpent, spent.get('big')]).toEqual([
      3_000_000_000n,
      3_000_000_000n,
      3_000_000_000n,
    ]);
    expect(unitsJson(usageRow.unitsSpent)).toBe(3_000_000_000);
    expect(moneyOf(usageRow.unitsSpent, { amount: '0.001', currency: 'EUR' }).amount).toBe('3000000.000');
  });
});
